"""Per-channel gated activation with a learnable shift.

y[b, c, t] = x[b, c, t] * sigmoid(x[b, c, t] * scale[c]) + shift[c]

A SiLU-like gate whose steepness is learned per channel, as found in
channel-wise adaptive activations.
"""
import torch
import torch.nn as nn

BATCH = 8
CHANNELS = 64
LENGTH = 1024


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)
        self.shift = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x):
        scale = self.scale.view(1, -1, 1)
        shift = self.shift.view(1, -1, 1)
        return x * torch.sigmoid(x * scale) + shift


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_input_variants():
    return [
        [torch.randn(3, CHANNELS, 1001)],
        [torch.randn(1, CHANNELS, 1)],
    ]


def get_init_inputs():
    return [CHANNELS]
