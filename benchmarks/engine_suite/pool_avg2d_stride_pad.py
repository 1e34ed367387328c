"""4x4 average pooling with stride 2 and padding 1, padding left out of the count, then a constant scale.

Family: pooling (avg_pool2d with stride, padding and count_include_pad=False: a border-dependent divisor).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 64
HEIGHT = 48
WIDTH = 48

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT // 2, WIDTH // 2)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        pooled = F.avg_pool2d(x, kernel_size=4, stride=2, padding=1, count_include_pad=False)
        return pooled * 3.0


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
