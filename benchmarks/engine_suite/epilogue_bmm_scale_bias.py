"""A batched matmul of two inputs, scaled by a constant and shifted by a learned per-column bias.

Family: single heavy op with epilogue (torch.bmm with a broadcast epilogue).
"""
import torch
import torch.nn as nn

BATCH = 32
M = 128
K = 96
N = 160
SCALE = 0.125

OUTPUT_SHAPES = [(BATCH, M, N)]


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n) * 0.2)

    def forward(self, a, b):
        return torch.bmm(a, b) * SCALE + self.bias


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return [N]
