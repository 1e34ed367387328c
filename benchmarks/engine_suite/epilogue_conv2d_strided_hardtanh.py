"""A stride-2 3x3 convolution that halves the image, then hardtanh clipped to [-0.5, 0.5] plus a constant.

Family: single heavy op with epilogue (strided conv2d + a clamp-like activation).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
IN_CHANNELS = 16
OUT_CHANNELS = 48
HEIGHT = 64
WIDTH = 64

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, HEIGHT // 2, WIDTH // 2)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1)

    def forward(self, x):
        return F.hardtanh(self.conv(x), -0.5, 0.5) + 0.5


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
