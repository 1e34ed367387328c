"""A ConvTranspose2d with kernel 2 and stride 2, then log_softmax over the channels."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(4, 5, 2, stride=2)

    def forward(self, x):
        return torch.log_softmax(self.deconv(x), dim=1)


def get_inputs():
    return [torch.randn(2, 4, 3, 5)]


def get_input_variants():
    return [[torch.randn(1, 4, 2, 1)]]


def get_init_inputs():
    return []
