"""LayerNorm with weight and bias over the last dim, then a ReLU and a shift."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return torch.relu(F.layer_norm(x, (x.shape[-1],), self.weight, self.bias)) - 0.25


def get_inputs():
    return [torch.randn(10, 200)]


def get_input_variants():
    return [[torch.randn(3, 5, 200)], [torch.randn(1, 200) * 10]]


def get_init_inputs():
    return [200]
