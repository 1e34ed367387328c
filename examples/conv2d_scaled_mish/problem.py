"""3x3 convolution followed by Mish with a learned steepness per channel.

v = conv2d(x, W, b)                       (3x3, padding 1)
y = v * tanh(softplus(v * scale[c]))

Mish whose input is scaled per output channel, so each channel learns how
sharply it gates. Eager PyTorch runs the convolution and then four pointwise
kernels (multiply, softplus, tanh, multiply) over the whole feature map.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
IN_CHANNELS = 32
OUT_CHANNELS = 32
SIZE = 32


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.scale = nn.Parameter(torch.rand(out_channels) * 1.5 + 0.5)

    def forward(self, x):
        v = self.conv(x)
        return v * torch.tanh(F.softplus(v * self.scale.view(1, -1, 1, 1)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_input_variants():
    # Odd heights and widths, and a map one pixel high, where every tap but the middle row is padding.
    return [
        [torch.randn(3, IN_CHANNELS, 17, 29)],
        [torch.randn(1, IN_CHANNELS, 1, 7)],
    ]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
