"""nn.InstanceNorm2d with a learned affine map: each (sample, channel) plane normalized on its own.

Family: normalizations (instance norm: a reduction over H and W per plane).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
HEIGHT = 48
WIDTH = 48

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, affine=True)
        with torch.no_grad():
            self.norm.weight.copy_(torch.rand(channels) + 0.5)
            self.norm.bias.copy_(torch.randn(channels) * 0.1)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 1.5 - 0.5]


def get_init_inputs():
    return [CHANNELS]
