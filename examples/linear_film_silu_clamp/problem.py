"""Linear layer, a learned per-feature scale and shift, SiLU, a clamp and a scaled skip of the product.

h = x @ W^T + b
y = clamp(silu(h * gamma + beta), -0.25, 4) + 0.25 * h

A feed-forward projection with feature-wise modulation (gamma, beta learned per
output feature) and a bounded activation. Eager PyTorch runs the product and
then six pointwise kernels, each a full read and write of the output.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
IN_FEATURES = 1024
OUT_FEATURES = 1024


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        # Wide enough that some features reach both ends of the clamp.
        self.gamma = nn.Parameter(torch.rand(out_features) * 4.0 + 1.0)
        self.beta = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x):
        h = self.linear(x)
        z = h * self.gamma + self.beta
        return torch.clamp(F.silu(z), -0.25, 4.0) + 0.25 * h


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_input_variants():
    # A row count that is not a multiple of any tile, and extra leading dims.
    return [
        [torch.randn(37, IN_FEATURES)],
        [torch.randn(2, 9, IN_FEATURES)],
    ]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
