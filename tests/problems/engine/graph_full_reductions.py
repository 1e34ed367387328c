"""Reductions over several dims: the sum of a product over everything (a 0-d result) and a max over two dims."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return (x * y).sum(), torch.amax(x, dim=(0, 2)) - 1.0


def get_inputs():
    return [torch.randn(4, 6, 10), torch.randn(4, 6, 10)]


def get_init_inputs():
    return []
