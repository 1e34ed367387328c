"""A (batch, time, channels) tensor laid out as (batch, channels, time) with transpose + contiguous, then scaled.

Family: data movement (a transposing copy with a pointwise op; the work is all in the memory access order).
"""
import torch
import torch.nn as nn

BATCH = 32
TIME = 512
CHANNELS = 256

OUTPUT_SHAPES = [(BATCH, CHANNELS, TIME)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)

    def forward(self, x):
        return (x * self.scale).transpose(1, 2).contiguous()


def get_inputs():
    return [torch.randn(BATCH, TIME, CHANNELS)]


def get_init_inputs():
    return [CHANNELS]
