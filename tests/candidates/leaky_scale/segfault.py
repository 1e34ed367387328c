"""Trick candidate for tests/problems/leaky_scale.py: Dereferences a null pointer."""

import ctypes
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        ctypes.string_at(0)
        return x
