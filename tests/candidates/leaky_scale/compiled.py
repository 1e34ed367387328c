"""Trick candidate for tests/problems/leaky_scale.py: Hands the reference to torch.compile."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return torch.compile(lambda a, s: torch.where(a * s > 0, a * s, 0.1 * a * s))(x, self.scale)
