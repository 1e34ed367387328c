"""A linear layer whose doubled output goes through a softmax over its features."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.linear = nn.Linear(features_in, features_out)

    def forward(self, x):
        return torch.softmax(self.linear(x) * 2.0, dim=-1)


def get_inputs():
    return [torch.randn(14, 24)]


def get_input_variants():
    return [[torch.randn(2, 3, 24)], [torch.randn(1, 24)]]


def get_init_inputs():
    return [24, 300]
