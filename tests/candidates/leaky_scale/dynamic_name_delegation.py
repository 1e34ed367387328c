"""Trick candidate for tests/problems/leaky_scale.py: Delegates to PyTorch through a function name assembled at run time."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        op = getattr(torch, "wh" + "ere")
        y = x * self.scale
        return op(y > 0, y, 0.1 * y)
