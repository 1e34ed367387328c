"""A convolution whose output is batch-normalized with the batch's own statistics (training mode), then ReLU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, filters):
        super().__init__()
        self.conv = nn.Conv2d(channels, filters, 3)
        self.norm = nn.BatchNorm2d(filters)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(3, 2, 7, 6)]


def get_input_variants():
    return [[torch.randn(2, 2, 5, 9)]]


def get_init_inputs():
    return [2, 5]
