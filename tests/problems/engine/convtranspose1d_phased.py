"""A ConvTranspose1d with stride 3 (kernel 4, padding 1, output padding 2), then tanh."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(5, 7, 4, stride=3, padding=1, output_padding=2)

    def forward(self, x):
        return torch.tanh(self.deconv(x))


def get_inputs():
    return [torch.randn(3, 5, 9)]


def get_input_variants():
    return [[torch.randn(1, 5, 1)]]


def get_init_inputs():
    return []
