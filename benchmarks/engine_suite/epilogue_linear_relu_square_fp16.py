"""A float16 linear layer followed by a squared ReLU (relu(h) ** 2), as in some transformer MLPs.

Family: single heavy op with epilogue, in half precision (a tensor-core GEMM on a GPU).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
IN_FEATURES = 512
OUT_FEATURES = 512

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.half()

    def forward(self, x):
        return F.relu(self.linear(x)).square()


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES).half()]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
