"""Softmax over the last dim after a scale, with odd row lengths and a 3-D variant."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 1.5, dim=-1)


def get_inputs():
    return [torch.randn(12, 50) * 3.0]


def get_input_variants():
    return [[torch.randn(5, 301) * 3.0], [torch.randn(33, 3) * 3.0], [torch.randn(2, 3, 17) * 3.0]]


def get_init_inputs():
    return []
