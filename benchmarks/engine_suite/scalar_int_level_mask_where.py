"""A mask computed from an integer (int64) input, (levels % 3 == 0) | (levels >= 8), applied with torch.where.

Family: integer inputs (integer arithmetic and comparisons producing a boolean mask that selects between floats).
"""
import torch
import torch.nn as nn

ROWS = 1024
COLS = 1024
LEVELS = 10
HIGH = 8

OUTPUT_SHAPES = [(ROWS, COLS)]


class Model(nn.Module):
    def __init__(self, high):
        super().__init__()
        self.high = high

    def forward(self, x, levels):
        mask = (levels % 3 == 0) | (levels >= self.high)
        return torch.where(mask, x * 2.0, -x.abs())


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randint(0, LEVELS, (ROWS, COLS))]


def get_init_inputs():
    return [HIGH]
