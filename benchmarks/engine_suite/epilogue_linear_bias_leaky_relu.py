"""A linear layer whose output goes through a leaky ReLU and a constant gain.

Family: single heavy op with epilogue (a GEMM with bias, then two pointwise ops to fold into its store).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
IN_FEATURES = 512
OUT_FEATURES = 1024
NEGATIVE_SLOPE = 0.05
GAIN = 1.5

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.leaky_relu(self.linear(x), NEGATIVE_SLOPE) * GAIN


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
