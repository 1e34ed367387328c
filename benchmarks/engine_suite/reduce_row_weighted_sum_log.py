"""The log of each row's sum of a positive input weighted by a positive learned vector: log(sum_j w_j x_ij).

Family: reductions (a row sum with a pointwise op before it and a transcendental after it; inputs positive).
"""
import torch
import torch.nn as nn

ROWS = 2048
COLS = 1024

OUTPUT_SHAPES = [(ROWS,)]


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(cols) + 0.1)

    def forward(self, x):
        return torch.log((x * self.weight).sum(dim=-1))


def get_inputs():
    return [torch.rand(ROWS, COLS) * 2.0 + 0.05]


def get_init_inputs():
    return [COLS]
