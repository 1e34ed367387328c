"""Masks combined with &, | and ~ (and torch.logical_and), then used to select and as numbers."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        inside = (x > -1.0) & (x < 1.0)
        keep = inside | (y > 0.5)
        return torch.where(~keep, 0.0, x * 2.0) + torch.logical_and(keep, y < 0.9).float()


def get_inputs():
    return [torch.randn(64, 96), torch.rand(64, 96)]


def get_input_variants():
    return [[torch.randn(7, 33), torch.rand(7, 33)]]


def get_init_inputs():
    return []
