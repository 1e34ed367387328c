"""The sum of an elementwise product over all elements, x.mul(y).sum(): a scalar (0-d) output.

Family: reductions (a full reduction to a scalar).
"""
import torch
import torch.nn as nn

BATCH = 256
FEATURES = 4096

OUTPUT_SHAPES = [()]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return (x * y).sum()


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
