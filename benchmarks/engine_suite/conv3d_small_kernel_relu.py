"""A 3x3x3 same-padded Conv3d on a small volume batch, then ReLU.

Family: 3-D convolutions (a small cubic kernel with an activation).
"""
import torch
import torch.nn as nn

BATCH = 4
IN_CHANNELS = 8
OUT_CHANNELS = 16
DEPTH = 16
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, DEPTH, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
