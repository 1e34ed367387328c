"""F.conv3d by a weight parameter (no bias, stride 2, padding 1), then a sum over the last dim."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 3, 3, 3, 3) * 0.2)

    def forward(self, x):
        return F.conv3d(x, self.weight, stride=2, padding=1).sum(dim=-1)


def get_inputs():
    return [torch.randn(2, 3, 5, 6, 7)]


def get_input_variants():
    return [[torch.randn(1, 3, 1, 2, 3)]]


def get_init_inputs():
    return []
