"""Pointwise with per-channel parameters broadcast over (batch, channel, length), at interpreter-friendly sizes."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)
        self.shift = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x):
        return x * torch.sigmoid(x * self.scale.view(1, -1, 1)) + self.shift.view(1, -1, 1)


def get_inputs():
    return [torch.randn(2, 6, 40)]


def get_input_variants():
    return [[torch.randn(3, 6, 33)], [torch.randn(1, 6, 1)]]


def get_init_inputs():
    return [6]
