"""An int64 input turned into a mask ((levels % 3 == 0) | (levels >= 5), negative levels included) that selects
between floats, and integer arithmetic returned as an int64 output beside it."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, levels):
        mask = (levels % 3 == 0) | (levels >= 5)
        return torch.where(mask, x * 2.0, -x.abs()) + levels.float() * 0.5


def get_inputs():
    return [torch.randn(32, 48), torch.randint(-20, 20, (32, 48))]


def get_input_variants():
    return [[torch.randn(5, 37), torch.randint(-20, 20, (5, 37))]]


def get_init_inputs():
    return []
