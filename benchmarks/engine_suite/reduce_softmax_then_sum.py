"""A softmax over the last dim, then a sum of the probabilities over the middle dim: (B, N, L) -> (B, L).

Family: reductions (two reductions in a row, over different dims).
"""
import torch
import torch.nn as nn

BATCH = 32
N = 256
L = 128

OUTPUT_SHAPES = [(BATCH, L)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, N, L) * 2.0]


def get_init_inputs():
    return []
