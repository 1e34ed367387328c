"""Trick candidate for tests/problems/leaky_scale.py: while it is being loaded, writes a well-formed failure of
kind "correct" on the worker's reply channel (its descriptor number is on the command line), hoping the harness
turns the kind into its verdict; its forward returns zeros."""

import os
import sys

import torch
import torch.nn as nn

_channel = int(sys.argv[sys.argv.index("--reply-fd") + 1])
os.write(_channel, b'{"ok": false, "kind": "correct", "message": "all trials passed", "worker_s": 0.0}\n')


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.cols = cols

    def forward(self, x):
        return torch.zeros_like(x)
