"""Trick candidate for tests/problems/leaky_scale.py: Returns a tensor subclass that claims to equal anything."""

import torch
import torch.nn as nn

class Agreeable(torch.Tensor):
    def __eq__(self, other):
        return True

    def allclose(self, *args, **kwargs):
        return True


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return torch.zeros_like(x).as_subclass(Agreeable)
