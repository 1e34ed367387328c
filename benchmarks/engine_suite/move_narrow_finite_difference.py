"""A forward difference along time by slicing (x[:, 1:] - x[:, :-1]) and a narrow window of the features.

Family: data movement (slices with offsets and narrow, so that inputs are read at shifted strides).
"""
import torch
import torch.nn as nn

BATCH = 64
TIME = 257
FEATURES = 320
START = 32
WINDOW = 256

OUTPUT_SHAPES = [(BATCH, TIME - 1, WINDOW)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        window = x.narrow(2, START, WINDOW)
        return window[:, 1:, :] - window[:, :-1, :]


def get_inputs():
    return [torch.randn(BATCH, TIME, FEATURES)]


def get_init_inputs():
    return []
