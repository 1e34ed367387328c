"""Two computed branches of one input, tanh(x) and x * sigmoid(2x), concatenated along the feature dim.

Family: data movement (torch.cat of two computed tensors: each branch written into half of the output).
"""
import torch
import torch.nn as nn

BATCH = 512
FEATURES = 768

OUTPUT_SHAPES = [(BATCH, 2 * FEATURES)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cat([torch.tanh(x), x * torch.sigmoid(2.0 * x)], dim=-1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
