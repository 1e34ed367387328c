"""BatchNorm1d in training mode on a (batch, channels, length) input, followed by tanh.

Family: normalizations (training-mode batch norm over N and L per channel, then an activation).
"""
import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 128
LENGTH = 256

OUTPUT_SHAPES = [(BATCH, CHANNELS, LENGTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return torch.tanh(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH) * 0.5 + 0.25]


def get_init_inputs():
    return [CHANNELS]
