"""A residual convolution block: relu(x + conv2(relu(conv1(x)))), two 3x3 same-padded convolutions.

Family: residual blocks x + f(x) (two convolutions, the skip and a final activation in the epilogue).
"""
import torch
import torch.nn as nn

BATCH = 8
CHANNELS = 32
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
