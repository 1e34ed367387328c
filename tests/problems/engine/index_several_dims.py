"""Indexing several dims at once: an integer and a slice of an input, two integers and a slice of a parameter.

The input's cut (x[:, 1:5, 2]) is no dense operand: a kernel that reads operands contiguously gets a copy of it.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(4, 3, 29))

    def forward(self, x):
        return torch.tanh(x[:, 1:5, 2] * 2.0) + self.table[2, -1, 3:7]


def get_inputs():
    return [torch.randn(6, 9, 5)]


def get_input_variants():
    return [[torch.randn(3, 9, 5)], [torch.randn(5, 9, 6).permute(2, 1, 0)[:, :, :5]]]


def get_init_inputs():
    return []
