"""Reductions over a dim of size 1 and a softmax over one: identities and a constant (a degenerate problem)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.sum(x, dim=1, keepdim=True) + torch.amax(x, dim=1, keepdim=True)
        return y * torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 1, 32)]


def get_input_variants():
    return [[torch.randn(3, 1, 7)]]


def get_init_inputs():
    return []
