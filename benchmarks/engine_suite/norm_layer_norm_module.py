"""nn.LayerNorm over the last dim of a 2-D input with wide rows (1536), then a residual add of the input.

Family: normalizations (module layer norm, its output added back to its input).
"""
import torch
import torch.nn as nn

ROWS = 1024
FEATURES = 1536

OUTPUT_SHAPES = [(ROWS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return x + self.norm(x)


def get_inputs():
    return [torch.randn(ROWS, FEATURES) * 3.0 - 1.0]


def get_init_inputs():
    return [FEATURES]
