"""Trick candidate for tests/problems/leaky_scale.py: Allocates until something gives."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        hoard = []
        while True:
            hoard.append(torch.ones(64 * 1024 * 1024))
