"""A blend of two square matrices by triangle: the lower triangle of one plus half the strict upper of the other.

Family: data movement (tril and triu masks on a batch of square matrices).
"""
import torch
import torch.nn as nn

BATCH = 32
SIZE = 256

OUTPUT_SHAPES = [(BATCH, SIZE, SIZE)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tril(a) + 0.5 * torch.triu(b, diagonal=1)


def get_inputs():
    return [torch.randn(BATCH, SIZE, SIZE), torch.randn(BATCH, SIZE, SIZE)]


def get_init_inputs():
    return []
