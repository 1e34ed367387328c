"""A 3x3 same-padded 2-D convolution, ReLU, then a learned per-channel scale.

Family: single heavy op with epilogue (conv2d + activation + a parameter broadcast over H and W).
"""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 32
OUT_CHANNELS = 48
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1) + 0.5)

    def forward(self, x):
        return torch.relu(self.conv(x)) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
