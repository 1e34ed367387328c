"""A stride-2 ConvTranspose2d (kernel 3, padding 1, output_padding 1) that doubles H and W, then ReLU.

Family: transposed convolutions (2-D upsampling as in a decoder, with an activation).
"""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 64
OUT_CHANNELS = 32
HEIGHT = 16
WIDTH = 16

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, 2 * HEIGHT, 2 * WIDTH)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return torch.relu(self.deconv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
