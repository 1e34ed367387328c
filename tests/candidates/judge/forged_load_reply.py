"""Trick candidate for tests/problems/leaky_scale.py: while it is being loaded, writes a well-formed answer to the
load request on the worker's reply channel, ahead of the worker's own, so that every later answer is read one
request late; its forward returns zeros."""

import os
import sys

import torch
import torch.nn as nn

_channel = int(sys.argv[sys.argv.index("--reply-fd") + 1])
os.write(_channel, b'{"ok": true, "build_s": 0.0, "builds": 0, "worker_s": 0.0}\n')


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.cols = cols

    def forward(self, x):
        return torch.zeros_like(x)
