"""Trick candidate for tests/problems/leaky_scale.py: Calls PyTorch compute on the reference's operators directly."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = torch.mul(x, self.scale)
        return torch.where(y > 0, y, y * 0.1)
