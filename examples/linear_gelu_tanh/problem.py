"""Linear layer followed by GELU (tanh approximation).

y = gelu_tanh(x @ W^T + b)

The feed-forward block of a small transformer MLP.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
IN_FEATURES = 768
OUT_FEATURES = 768


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh")


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_input_variants():
    # A batch that is not a multiple of the usual tile sizes, and extra
    # leading dims, which nn.Linear accepts.
    return [
        [torch.randn(37, IN_FEATURES)],
        [torch.randn(2, 9, IN_FEATURES)],
    ]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
