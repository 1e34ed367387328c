"""Test problem whose outputs are all far below float32's absolute tolerance: y = 1e-6 * tanh(x @ w)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x):
        return 1e-6 * torch.tanh(x @ self.weight)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [128]
