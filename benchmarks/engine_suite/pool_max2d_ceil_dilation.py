"""nn.MaxPool2d with kernel 3, stride 2, dilation 2 and ceil_mode on a 46x46 image.

Family: pooling (dilated windows, and a last partial window kept by ceil_mode).
"""
import torch
import torch.nn as nn

BATCH = 16
CHANNELS = 32
SIZE = 46
KERNEL = 3
STRIDE = 2
DILATION = 2
# ceil((46 - 2 * (3 - 1) - 1) / 2) + 1 = 22 windows (floor mode would give 21): the last one starts at 42,
# inside the input, and its third tap (46) falls outside.
OUT_SIZE = -(-(SIZE - DILATION * (KERNEL - 1) - 1) // STRIDE) + 1

OUTPUT_SHAPES = [(BATCH, CHANNELS, OUT_SIZE, OUT_SIZE)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(KERNEL, stride=STRIDE, dilation=DILATION, ceil_mode=True)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []
