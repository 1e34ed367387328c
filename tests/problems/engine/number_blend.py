"""A Python float argument of forward (alpha), used after a linear layer and through 1 - alpha."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(24, 40)

    def forward(self, x, alpha: float):
        h = self.linear(x)
        return alpha * torch.tanh(h) + (1.0 - alpha) * F.silu(h) + alpha


def get_inputs():
    return [torch.randn(16, 24), 0.3]


def get_input_variants():
    return [[torch.randn(7, 24), -1.25], [torch.randn(1, 24), 2]]


def get_init_inputs():
    return []
