"""F.conv_transpose2d by a weight parameter (no bias, stride 2, kernel 3, output padding 1) plus a per-channel shift."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 3, 3, 3) * 0.3)
        self.shift = nn.Parameter(torch.randn(3))

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, stride=2, output_padding=1)
        return y + self.shift.view(1, -1, 1, 1)


def get_inputs():
    return [torch.randn(2, 5, 4, 6)]


def get_input_variants():
    return [[torch.randn(1, 5, 1, 1)]]


def get_init_inputs():
    return []
