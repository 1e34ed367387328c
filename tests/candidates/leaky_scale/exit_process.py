"""Trick candidate for tests/problems/leaky_scale.py: Ends the worker process abruptly."""

import os
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        os._exit(3)
