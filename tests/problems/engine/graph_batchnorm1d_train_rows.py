"""Batch norm in training mode over rows of features (no length dim: each channel's statistics are over the
batch alone), without an affine part, then a sigmoid."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features, affine=False)

    def forward(self, x):
        return torch.sigmoid(self.norm(x))


def get_inputs():
    return [torch.randn(37, 13) * 3.0 - 1.0]


def get_input_variants():
    return [[torch.randn(5, 13)]]


def get_init_inputs():
    return [13]
