"""One level of a UNet at batch 32 on 64x64 maps: a conv-groupnorm-SiLU block, max-pool down, a 128-channel block,
transposed-conv up, concatenation with the skip, a decoder block and a 1x1 head to 3 channels. About 36 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
SIDE = 64
OUT_CHANNELS = 3


def _block(channels_in, channels_out):
    return nn.Sequential(nn.Conv2d(channels_in, channels_out, 3, padding=1), nn.GroupNorm(8, channels_out), nn.SiLU())


class Model(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.encode = _block(channels, channels)
        self.down = nn.MaxPool2d(2)
        self.middle = _block(channels, 2 * channels)
        self.up = nn.ConvTranspose2d(2 * channels, channels, kernel_size=2, stride=2)
        self.decode = _block(2 * channels, channels)
        self.head = nn.Conv2d(channels, out_channels, kernel_size=1)

    def forward(self, x):
        skip = self.encode(x)
        deep = self.up(self.middle(self.down(skip)))
        return self.head(self.decode(torch.cat([deep, skip], dim=1)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, OUT_CHANNELS]
