"""Bad test problem: dropout in training mode makes the reference give other outputs on every call."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x) * 2.0


def get_inputs():
    return [torch.randn(64, 100)]


def get_init_inputs():
    return []
