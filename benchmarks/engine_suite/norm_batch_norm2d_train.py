"""BatchNorm2d in training mode (statistics of the batch itself, running buffers updated) on an image batch.

Family: normalizations (training-mode batch norm: a per-channel reduction over N, H, W before the pointwise map).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 1.0]


def get_init_inputs():
    return [CHANNELS]
