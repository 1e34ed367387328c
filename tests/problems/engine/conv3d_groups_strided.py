"""A Conv3d with groups, a different stride, padding and dilation per dim, then y * sigmoid(y)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(6, 9, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=3)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(2, 6, 5, 7, 9)]


def get_input_variants():
    return [[torch.randn(1, 6, 3, 4, 3)]]


def get_init_inputs():
    return []
