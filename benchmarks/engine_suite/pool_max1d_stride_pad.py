"""max_pool1d with kernel 4, stride 2 and padding 1 over a sequence, followed by tanh.

Family: pooling (1-D max pooling over the last dim).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 128
LENGTH = 512

OUTPUT_SHAPES = [(BATCH, CHANNELS, LENGTH // 2)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(F.max_pool1d(x, kernel_size=4, stride=2, padding=1))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
