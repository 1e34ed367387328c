"""Global average pooling with adaptive_avg_pool2d to 1x1, flattened to (batch, channels), then a sigmoid.

Family: pooling (an adaptive pool that is a mean over H and W per channel).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 256
HEIGHT = 16
WIDTH = 16

OUTPUT_SHAPES = [(BATCH, CHANNELS)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(F.adaptive_avg_pool2d(x, 1).flatten(1))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
