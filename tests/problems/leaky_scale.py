"""Test problem: y = leaky_relu(x * scale, 0.1) with a learnable per-column scale."""

import torch
import torch.nn as nn

ROWS, COLS = 256, 512


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
