"""RMS norm written by hand: x * rsqrt(mean(x ** 2, -1) + eps) * weight, over the last dim.

Family: normalizations (a hand-written norm: a row reduction, rsqrt, and a learned per-feature scale).
"""
import torch
import torch.nn as nn

BATCH = 32
TOKENS = 128
FEATURES = 768
EPS = 1e-6

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES, EPS]
