"""A ConvTranspose1d with dilation 2 and 2 groups (stride 3, padding 2, output padding 1), then GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(4, 6, 5, stride=3, padding=2, output_padding=1, dilation=2, groups=2)

    def forward(self, x):
        return F.gelu(self.deconv(x))


def get_inputs():
    return [torch.randn(3, 4, 7)]


def get_input_variants():
    return [[torch.randn(1, 4, 1)]]


def get_init_inputs():
    return []
