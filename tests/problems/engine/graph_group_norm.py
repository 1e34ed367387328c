"""Group norm (three groups of two channels) then SiLU, and instance norm of the result, summed."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.groups = nn.GroupNorm(3, channels)
        self.instance = nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x):
        y = torch.nn.functional.silu(self.groups(x))
        return y + self.instance(y)


def get_inputs():
    return [torch.randn(2, 6, 5, 4)]


def get_input_variants():
    return [[torch.randn(3, 6, 5, 4)]]


def get_init_inputs():
    return [6]
