"""The mean squared difference between a prediction and a target, over all elements: a scalar loss.

Family: reductions (a full mean of a pointwise square).
"""
import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 16
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [()]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, prediction, target):
        return ((prediction - target) ** 2).mean()


def get_inputs():
    shape = (BATCH, CHANNELS, HEIGHT, WIDTH)
    return [torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
