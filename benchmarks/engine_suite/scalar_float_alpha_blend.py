"""A blend of two activations of a linear layer's output weighted by a float argument of forward: alpha.

Family: scalar inputs (forward(x, alpha: float), get_inputs giving [tensor, 0.5]; alpha is not a tensor).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
IN_FEATURES = 512
OUT_FEATURES = 512
ALPHA = 0.5

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, alpha: float):
        h = self.linear(x)
        return alpha * torch.tanh(h) + (1.0 - alpha) * F.silu(h)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES), ALPHA]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
