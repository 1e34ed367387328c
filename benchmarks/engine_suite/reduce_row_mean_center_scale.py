"""Each row centred on its mean, then scaled and shifted by learned per-column vectors.

Family: reductions (a row mean broadcast back into a pointwise op over the same row).
"""
import torch
import torch.nn as nn

BATCH = 64
TOKENS = 64
FEATURES = 512

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.shift = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return (x - x.mean(dim=-1, keepdim=True)) * self.scale + self.shift


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES]
