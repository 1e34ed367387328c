"""Test problem with input variants: row sums of a matrix, checked on three shapes."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(32, 64)]


def get_input_variants():
    return [[torch.randn(7, 13)], [torch.randn(1, 1000)]]


def get_init_inputs():
    return []
