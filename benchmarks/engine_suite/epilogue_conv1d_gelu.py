"""A 1-D convolution (kernel 5, same padding) that widens the channels, followed by the exact GELU.

Family: single heavy op with epilogue (conv1d + activation).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
LENGTH = 512
KERNEL = 5

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, LENGTH)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel, padding=kernel // 2)

    def forward(self, x):
        return F.gelu(self.conv(x))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL]
