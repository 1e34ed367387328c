"""A residual branch with a learned per-feature scale: x + alpha * tanh(linear(x)) (a LayerScale-like skip).

Family: residual blocks x + f(x) (one GEMM; skip and scale fused into its epilogue).
"""
import torch
import torch.nn as nn

BATCH = 64
TOKENS = 16
FEATURES = 640

OUTPUT_SHAPES = [(BATCH, TOKENS, FEATURES)]


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.alpha = nn.Parameter(torch.full((features,), 0.1) + torch.rand(features) * 0.1)

    def forward(self, x):
        return x + self.alpha * torch.tanh(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES]
