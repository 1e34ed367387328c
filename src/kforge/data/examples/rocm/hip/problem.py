"""Single-shot example (reference): a bias add followed by a clamp, on a (rows, cols) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return torch.clamp(x + self.bias, min=-1.0, max=1.0)


def get_inputs():
    return [torch.randn(4096, 1024)]


def get_init_inputs():
    return [1024]
