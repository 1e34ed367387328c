"""Trick candidate for tests/problems/leaky_scale.py: Searches the process for a tensor that could hold the answer instead of computing it."""

import gc
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj.data_ptr() != x.data_ptr():
                return obj.clone()
        return torch.zeros_like(x)
