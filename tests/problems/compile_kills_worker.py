"""tests/problems/leaky_scale.py, except that its reference takes its process down when torch.compile traces it.
An evaluation must go on with the eager baseline and say that torch.compile's is unavailable; the honest
leaky_scale candidates solve it."""
import os

import torch
import torch.nn as nn

ROWS, COLS = 256, 512


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        if torch.compiler.is_compiling():
            os._exit(3)
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
