"""Average pooling plus a second input of the pooled shape, which another input set gives as a per-channel
tensor instead (it broadcasts): the pool's kernel applies the sum before its store and must read either."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, shift):
        return F.avg_pool2d(x, kernel_size=2) + shift


def get_inputs():
    return [torch.randn(2, 3, 8, 10), torch.randn(2, 3, 4, 5)]


def get_input_variants():
    return [[torch.randn(2, 3, 8, 10), torch.randn(1, 3, 1, 1)]]


def get_init_inputs():
    return []
