"""The channel index with the largest biased score at each pixel: argmax over dim 1 of x + bias[c].

Family: reductions (argmax over a non-last dim; an integer (int64) output).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 21
HEIGHT = 64
WIDTH = 64

OUTPUT_SHAPES = [(BATCH, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1, 1) * 0.5)

    def forward(self, x):
        return torch.argmax(x + self.bias, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
