"""A grouped 2-D convolution with a non-square kernel, stride 2, dilation 2 and uneven padding, then a
per-channel gain and ReLU. Forty output channels (twenty a group) and K = 2 x 3 x 2 = 12: no tile divides them."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 40, (3, 2), stride=2, padding=(2, 1), dilation=2, groups=2)
        self.gain = nn.Parameter(torch.rand(40) + 0.5)

    def forward(self, x):
        return torch.relu(self.conv(x) * self.gain.view(1, -1, 1, 1))


def get_inputs():
    return [torch.randn(2, 4, 11, 9)]


def get_input_variants():
    return [[torch.randn(1, 4, 3, 2)], [torch.randn(3, 4, 16, 13)]]


def get_init_inputs():
    return []
