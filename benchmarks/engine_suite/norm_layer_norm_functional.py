"""F.layer_norm over the last dim with learned weight and bias, followed by a GELU.

Family: normalizations (functional layer norm with an activation after it).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
TOKENS = 128
FEATURES = 512
EPS = 1e-5

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.features = features

    def forward(self, x):
        return F.gelu(F.layer_norm(x, (self.features,), self.weight, self.bias, EPS))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES) * 2.0 + 0.5]


def get_init_inputs():
    return [FEATURES]
