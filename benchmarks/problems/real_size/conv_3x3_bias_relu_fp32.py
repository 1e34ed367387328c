"""A 3x3 convolution with bias and ReLU over a batch of 64 feature maps of 56x56, 64 channels in, 128 out: the
shape of an early ResNet stage, about 30 GFLOP per call in fp32.

A benchmark problem for the engine at real sizes (benchmarks/engine_real_size.py).
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS_IN = 64
CHANNELS_OUT = 128
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.conv = nn.Conv2d(channels_in, channels_out, kernel_size=3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS_IN, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS_IN, CHANNELS_OUT]
