"""A strided, dilated depthwise convolution without bias, scaled per channel."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, stride=2, padding=2, dilation=2, groups=channels, bias=False)
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)

    def forward(self, x):
        return self.conv(x) * self.scale.view(1, -1, 1)


def get_inputs():
    return [torch.randn(2, 5, 30)]


def get_input_variants():
    return [[torch.randn(1, 5, 3)], [torch.randn(3, 5, 257)]]


def get_init_inputs():
    return [5]
