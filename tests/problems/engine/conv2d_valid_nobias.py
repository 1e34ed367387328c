"""A 3x3 convolution without padding or bias, gated by a second input: sigmoid(conv(x)) * y + 0.5.

The variants give the forward's general path: a transposed (non-contiguous) x, and a y broadcast along the
batch and the rows, which the kernel reads laid out in the output's shape."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 16, 3, bias=False)

    def forward(self, x, y):
        return torch.sigmoid(self.conv(x)) * y + 0.5


def get_inputs():
    return [torch.randn(2, 6, 9, 12), torch.randn(2, 16, 7, 10)]


def get_input_variants():
    return [
        [torch.randn(1, 6, 5, 3), torch.randn(1, 16, 3, 1)],
        [torch.randn(3, 6, 12, 9).transpose(2, 3), torch.randn(1, 16, 1, 10)],
    ]


def get_init_inputs():
    return []
