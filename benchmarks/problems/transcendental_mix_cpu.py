"""Pointwise transcendentals over a large tensor: exact GELU, a log1p of a magnitude, sin, cos and expm1.

A benchmark problem for the builtin engine's C++ pointwise kernel: the fused loop is memory-light and
compute-heavy, so its time is the cost of the op spellings (vectorized or libm calls).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 2048
COLS = 2048


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x) + torch.log1p(x.abs()) + torch.sin(x) * torch.cos(x) + torch.expm1(x * 0.25)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 2.0]


def get_init_inputs():
    return []
