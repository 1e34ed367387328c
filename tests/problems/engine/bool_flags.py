"""A boolean input combined with a comparison, and a boolean output."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, flags):
        return ((x > 0.25) & flags) | ~(x > -1.0).logical_and(flags)


def get_inputs():
    return [torch.randn(20, 36), torch.rand(20, 36) > 0.5]


def get_input_variants():
    return [[torch.randn(3, 11), torch.rand(3, 11) > 0.5]]


def get_init_inputs():
    return []
