"""nn.GroupNorm with 8 groups of 8 channels on an image batch, followed by ReLU.

Family: normalizations (group norm: statistics over a group of channels and all pixels of one sample).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 64
GROUPS = 8
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return torch.relu(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + 0.3]


def get_init_inputs():
    return [GROUPS, CHANNELS]
