"""How many entries of each row exceed a threshold: (x > t).sum(dim=-1), an int64 count per row.

Family: integer outputs (a comparison's boolean mask summed as integers).
"""
import torch
import torch.nn as nn

ROWS = 2048
COLS = 1000
THRESHOLD = 0.25

OUTPUT_SHAPES = [(ROWS,)]


class Model(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x):
        return (x > self.threshold).sum(dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [THRESHOLD]
