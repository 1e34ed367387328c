"""A 3x3x3 convolution over short video clips, as in the second layer of a C3D-style network: 4 clips of 16 frames of
56x56, 64 -> 128 channels, with bias and ReLU. About 89 GFLOP per call.
"""
import torch
import torch.nn as nn

CLIPS = 4
CHANNELS_IN = 64
CHANNELS_OUT = 128
FRAMES = 16
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.conv = nn.Conv3d(channels_in, channels_out, kernel_size=3, padding=1)

    def forward(self, clips):
        return torch.relu(self.conv(clips))


def get_inputs():
    return [torch.randn(CLIPS, CHANNELS_IN, FRAMES, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS_IN, CHANNELS_OUT]
