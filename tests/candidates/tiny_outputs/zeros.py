"""Trick candidate for tests/problems/tiny_outputs.py: returns zeros, which sit inside atol everywhere."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x):
        return torch.zeros(x.shape[0], self.weight.shape[1])
