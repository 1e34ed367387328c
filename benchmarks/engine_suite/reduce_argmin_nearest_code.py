"""The index of each vector's nearest entry in a learned codebook: argmin over K of squared distances.

Family: reductions (a sum over D of a broadcast difference, then argmin over K; an int64 output).
"""
import torch
import torch.nn as nn

BATCH = 256
CODES = 256
DIM = 64

OUTPUT_SHAPES = [(BATCH,)]


class Model(nn.Module):
    def __init__(self, codes, dim):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(codes, dim))

    def forward(self, x):
        distances = ((x.unsqueeze(1) - self.codebook.unsqueeze(0)) ** 2).sum(dim=-1)
        return torch.argmin(distances, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [CODES, DIM]
