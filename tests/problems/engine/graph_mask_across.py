"""A mask computed before a linear layer and used after it: a boolean value passed from one kernel to the next."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(20, 20)

    def forward(self, x):
        keep = (x > -0.5) & (x < 1.0)
        h = self.linear(x * 2.0)
        return torch.where(keep, h, -h), keep


def get_inputs():
    return [torch.randn(12, 20)]


def get_input_variants():
    return [[torch.randn(3, 20)]]


def get_init_inputs():
    return []
