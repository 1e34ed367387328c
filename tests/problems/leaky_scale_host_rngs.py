"""Test problem: leaky_scale's model, with inputs drawn from NumPy's and Python's global generators.

KernelBench-style files sometimes draw with NumPy or `random`; every party drawing with one seed must still
see the same inputs.
"""

import random

import numpy as np
import torch
import torch.nn as nn

ROWS, COLS = 256, 512


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)


def get_inputs():
    gain = random.uniform(0.5, 2.0)
    return [torch.from_numpy(np.random.standard_normal((ROWS, COLS)).astype(np.float32)) * gain]


def get_init_inputs():
    return [COLS]
