"""A learned 2x upsampling of a decoder: a 4x4 transposed convolution of stride 2, 256 -> 128 channels, 32x32 up to
64x64 at batch 32, with bias and ReLU. About 34 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS_IN = 256
CHANNELS_OUT = 128
SIDE = 32


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.up = nn.ConvTranspose2d(channels_in, channels_out, kernel_size=4, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.up(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS_IN, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS_IN, CHANNELS_OUT]
