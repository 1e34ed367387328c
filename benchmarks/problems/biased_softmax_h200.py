"""Softmax over long rows with a temperature and a learned per-position bias, at an H200's bandwidth scale.

y[i, :] = softmax(x[i, :] / TEMPERATURE + bias)

A benchmark problem, not an example: 8192 rows of 8192 float32 values (256 MB read, 256 MB written per
call), so the kernel is judged by the share of the copy bandwidth it reaches. A row (32 KB) fits in one
program's registers: read once, written once.
"""
import torch
import torch.nn as nn

ROWS = 8192
WIDTH = 8192
TEMPERATURE = 1.5


class Model(nn.Module):
    def __init__(self, width, temperature):
        super().__init__()
        self.temperature = temperature
        self.bias = nn.Parameter(torch.randn(width) * 0.2)

    def forward(self, x):
        return torch.softmax(x / self.temperature + self.bias, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, WIDTH) * 2.0]


def get_input_variants():
    # Small, so correctness stays cheap: a few rows, and a 3-D input whose leading dims are rows.
    return [
        [torch.randn(3, WIDTH) * 2.0],
        [torch.randn(2, 5, WIDTH) * 2.0],
    ]


def get_init_inputs():
    return [WIDTH, TEMPERATURE]
