"""A wide fp32 linear layer with an exact GELU, at a size a transformer's MLP runs: 1024 tokens, 8192 features.

A benchmark problem for the engine at real sizes (benchmarks/engine_real_size.py): about 137 GFLOP per call, so
the device's matrix units decide the time, not the host. fp32 as PyTorch runs it by default on a GPU (full fp32
matmul unless the user allows TF32).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 1024
FEATURES = 8192


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return F.gelu(self.proj(x))


def get_inputs():
    return [torch.randn(TOKENS, FEATURES)]


def get_init_inputs():
    return [FEATURES]
