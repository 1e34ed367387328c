"""Trick candidate for tests/problems/leaky_scale.py: Makes every comparison succeed and returns zeros."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        torch.allclose = lambda *args, **kwargs: True
        torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
        return torch.zeros_like(x)
