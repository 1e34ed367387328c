"""An image made symmetric under both flips: (x + flip(x, W) + flip(x, H) + flip(x, H and W)) / 4.

Family: data movement (flip along one and two dims, read with reversed indices and summed).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
HEIGHT = 64
WIDTH = 64

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        total = x + torch.flip(x, dims=[-1]) + torch.flip(x, dims=[-2]) + torch.flip(x, dims=[-2, -1])
        return total * 0.25


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
