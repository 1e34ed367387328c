"""A SiLU-gated feed-forward layer: down(silu(gate(x)) * up(x)), three bias-free linears.

Family: several heavy ops per forward (two parallel GEMMs joined by a gate, then a third GEMM).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
TOKENS = 32
FEATURES = 512
HIDDEN = 1024

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.gate = nn.Linear(features, hidden, bias=False)
        self.up = nn.Linear(features, hidden, bias=False)
        self.down = nn.Linear(hidden, features, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
