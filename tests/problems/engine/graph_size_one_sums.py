"""Sums over dims of size one in a row, each its own kernel: a masked total over a mask's count, both (N, 1)
summed along dim 1 (the identity) and then dim 0 (the batch varies)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, t):
        counted = t != 3
        loss = torch.where(counted, x, 0.0)
        count = counted.float().sum(1, keepdim=True).sum(0, keepdim=True)
        total = loss.sum(1, keepdim=True).sum(0, keepdim=True)
        return total / count


def get_inputs():
    return [torch.randn(13, 1), torch.randint(0, 5, (13, 1))]


def get_input_variants():
    return [[torch.randn(6, 1), torch.randint(0, 5, (6, 1))]]


def get_init_inputs():
    return []
