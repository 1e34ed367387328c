"""Plain PyTorch candidate for tests/problems/leaky_scale.py, judged with the policy off: the honest twin of
rebound_clocks.py, so that a test can tell the two apart by their timings alone."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
