"""A running sum along the sequence of the input weighted by a learned per-position vector: cumsum(x * w, dim=1).

Family: scans (cumsum over the last dim of a 2-D input, with a pointwise op before it).
"""
import torch
import torch.nn as nn

ROWS = 512
LENGTH = 1024

OUTPUT_SHAPES = [(ROWS, LENGTH)]


class Model(nn.Module):
    def __init__(self, length):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(length) * 0.1)

    def forward(self, x):
        return torch.cumsum(x * self.weight, dim=1)


def get_inputs():
    return [torch.randn(ROWS, LENGTH)]


def get_init_inputs():
    return [LENGTH]
