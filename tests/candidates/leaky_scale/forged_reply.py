"""Trick candidate for tests/problems/leaky_scale.py: computes with PyTorch, and writes a forged answer on the
worker's reply channel (its descriptor number is on the command line) claiming that no operator ran, hoping
the harness takes it for the worker's own reply."""

import os
import sys

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        channel = int(sys.argv[sys.argv.index("--reply-fd") + 1])
        os.write(channel, b'{"ok": true, "ops": "none at all", "worker_s": 0.0}\n')
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
