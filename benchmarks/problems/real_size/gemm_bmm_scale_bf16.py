"""Sixteen bf16 matrix products of 1024x2048 by 2048x1024, scaled: attention-sized batched GEMMs, about 69 GFLOP
per call.

A benchmark problem for the engine at real sizes (benchmarks/engine_real_size.py).
"""
import torch
import torch.nn as nn

BATCH = 16
ROWS = 1024
INNER = 2048
COLS = 1024


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.bmm(a, b) * self.scale


def get_inputs():
    return [torch.randn(BATCH, ROWS, INNER, dtype=torch.bfloat16),
            torch.randn(BATCH, INNER, COLS, dtype=torch.bfloat16)]


def get_init_inputs():
    return [0.125]
