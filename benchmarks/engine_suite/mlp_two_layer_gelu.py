"""A two-layer MLP: expand 512 -> 1024 with the exact GELU, project back to 512.

Family: several heavy ops per forward (two GEMMs with an activation between them).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
FEATURES = 512
HIDDEN = 1024

OUTPUT_SHAPES = [(BATCH, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.up = nn.Linear(features, hidden)
        self.down = nn.Linear(hidden, features)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
