"""A bfloat16 two-layer MLP: 512 -> 1536 with SiLU, then 1536 -> 512.

Family: several heavy ops per forward, in bfloat16 (two tensor-core GEMMs on a GPU).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
FEATURES = 512
HIDDEN = 1536

OUTPUT_SHAPES = [(BATCH, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.up = nn.Linear(features, hidden)
        self.down = nn.Linear(hidden, features)
        self.to(torch.bfloat16)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


def get_inputs():
    return [torch.randn(BATCH, FEATURES).to(torch.bfloat16)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
