"""A projection by a stored matrix (x @ W, with leading batch dims on x), then a ReLU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features_in, features_out) / features_in ** 0.5)

    def forward(self, x):
        return torch.relu(x @ self.weight)


def get_inputs():
    return [torch.randn(2, 5, 12)]


def get_input_variants():
    return [[torch.randn(1, 1, 12)], [torch.randn(3, 11, 12)]]


def get_init_inputs():
    return [12, 20]
