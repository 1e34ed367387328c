"""The sum over a linear layer's output features (which simplification turns into one matrix-vector product)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.linear = nn.Linear(features_in, features_out)

    def forward(self, x):
        return self.linear(x).sum(dim=-1)


def get_inputs():
    return [torch.randn(12, 40)]


def get_input_variants():
    return [[torch.randn(1, 40)], [torch.randn(70, 40)]]


def get_init_inputs():
    return [40, 50]
