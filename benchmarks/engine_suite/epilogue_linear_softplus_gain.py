"""A linear layer, a learned per-feature offset subtracted, softplus, then a learned per-feature gain.

Family: single heavy op with epilogue (two broadcast parameters around a transcendental activation).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 192
IN_FEATURES = 768
OUT_FEATURES = 512

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.offset = nn.Parameter(torch.randn(out_features) * 0.3)
        self.gain = nn.Parameter(torch.rand(out_features) + 0.5)

    def forward(self, x):
        return F.softplus(self.linear(x) - self.offset) * self.gain


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
