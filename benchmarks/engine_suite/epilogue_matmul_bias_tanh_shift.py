"""A matmul against a stored (in, out) weight, a bias row, tanh, then an affine shift of the result.

Family: single heavy op with epilogue (torch.matmul with an untransposed weight rather than nn.Linear).
"""
import torch
import torch.nn as nn

BATCH = 128
IN_FEATURES = 1024
OUT_FEATURES = 768

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.tanh(torch.matmul(x, self.weight) + self.bias) * 0.8 + 0.1


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
