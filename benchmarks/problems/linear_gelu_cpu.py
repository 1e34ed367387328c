"""A linear layer with the exact (erf) GELU, sized so that two CPU cores spend milliseconds per call.

A benchmark problem for the builtin engine's C++ epilogue: the erf GELU is the most common epilogue of a
transformer MLP, and its loop only vectorizes when erf is spelled without <cmath>.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
IN_FEATURES = 1024
OUT_FEATURES = 1024


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
