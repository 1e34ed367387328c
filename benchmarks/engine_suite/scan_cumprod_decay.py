"""A running product along the last dim of factors near 1 (1 + 0.01 * noise), times a constant: bounded growth.

Family: scans (cumprod, on inputs kept near 1 so that the product stays well inside float32's range).
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 16
LENGTH = 512
GAIN = 0.5

OUTPUT_SHAPES = [(BATCH, CHANNELS, LENGTH)]


class Model(nn.Module):
    def __init__(self, gain):
        super().__init__()
        self.gain = gain

    def forward(self, x):
        return torch.cumprod(x, dim=-1) * self.gain


def get_inputs():
    return [1.0 + 0.01 * torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [GAIN]
