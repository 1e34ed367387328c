"""Batched scores: tanh(bmm(a, b) / 8) plus a learned bias per column."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, columns):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(columns) * 0.1)

    def forward(self, a, b):
        return torch.tanh(torch.bmm(a, b) * 0.125) + self.bias


def get_inputs():
    return [torch.randn(3, 9, 20), torch.randn(3, 20, 17)]


def get_input_variants():
    return [[torch.randn(1, 33, 5), torch.randn(1, 5, 17)], [torch.randn(2, 1, 40), torch.randn(2, 40, 17)]]


def get_init_inputs():
    return [17]
