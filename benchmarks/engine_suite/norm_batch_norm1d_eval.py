"""A linear layer then BatchNorm1d in eval mode (fixed, non-trivial running statistics), then ReLU.

Family: normalizations (eval-mode batch norm: a per-feature affine map that can fold into the GEMM).
"""
import torch
import torch.nn as nn

BATCH = 256
IN_FEATURES = 512
OUT_FEATURES = 512

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.BatchNorm1d(out_features)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.randn(out_features) * 0.2)
            self.norm.running_var.copy_(torch.rand(out_features) * 0.5 + 0.25)
            self.norm.weight.copy_(torch.rand(out_features) + 0.5)
            self.norm.bias.copy_(torch.randn(out_features) * 0.1)
        self.eval()

    def forward(self, x):
        return torch.relu(self.norm(self.linear(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
