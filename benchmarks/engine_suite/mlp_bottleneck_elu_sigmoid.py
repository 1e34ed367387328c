"""A bottleneck MLP on a 3-D input: squeeze 768 -> 192 with ELU, expand back to 768, sigmoid output.

Family: several heavy ops per forward (two GEMMs over flattened leading dims, different activations).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
TOKENS = 32
FEATURES = 768
BOTTLENECK = 192

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, bottleneck):
        super().__init__()
        self.squeeze = nn.Linear(features, bottleneck)
        self.expand = nn.Linear(bottleneck, features)

    def forward(self, x):
        return torch.sigmoid(self.expand(F.elu(self.squeeze(x))))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES, BOTTLENECK]
