"""An encoder step returning its hidden state tanh(W1 x) and a projection of it W2 h, as a pair.

Family: several outputs (a GEMM's activated output kept and also consumed by a second GEMM).
"""
import torch
import torch.nn as nn

BATCH = 192
IN_FEATURES = 512
HIDDEN = 768
OUT_FEATURES = 256

OUTPUT_SHAPES = [(BATCH, HIDDEN), (BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.encode = nn.Linear(in_features, hidden)
        self.project = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = torch.tanh(self.encode(x))
        return h, self.project(h)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN, OUT_FEATURES]
