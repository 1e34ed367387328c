"""A plain square fp32 matrix product, 8192 x 8192 by 8192 x 8192: the roofline anchor of the suite, about 1.1 TFLOP
per call.
"""
import torch
import torch.nn as nn

SIZE = 8192


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


def get_inputs():
    return [torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE)]


def get_init_inputs():
    return []
