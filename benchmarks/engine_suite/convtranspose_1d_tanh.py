"""A stride-2 ConvTranspose1d (kernel 4, padding 1) that doubles the length and halves the channels, then tanh.

Family: transposed convolutions (1-D upsampling by a learned filter, with an activation).
"""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 32
LENGTH = 256

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, 2 * LENGTH)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, 4, stride=2, padding=1)

    def forward(self, x):
        return torch.tanh(self.deconv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
