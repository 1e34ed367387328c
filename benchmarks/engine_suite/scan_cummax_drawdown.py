"""The drawdown of each series: its running maximum (torch.cummax(...).values) minus the series itself.

Family: scans (a cumulative max along dim 1 of a (batch, time, features) input).
"""
import torch
import torch.nn as nn

BATCH = 64
TIME = 256
FEATURES = 64

OUTPUT_SHAPES = [(BATCH, TIME, FEATURES)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cummax(x, dim=1).values - x


def get_inputs():
    return [torch.randn(BATCH, TIME, FEATURES)]


def get_init_inputs():
    return []
