"""Test problem: a batch norm in training mode (the default a Model is built in), then ReLU.

Its outputs use the batch's own statistics; its forward also updates the layer's running_mean, running_var and
num_batches_tracked, which the harness compares too (verify/state.py).
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, momentum=0.2)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return torch.relu(self.norm(x))


def get_inputs():
    return [torch.randn(4, 6, 5, 7) * 2.0 + 1.0]


def get_input_variants():
    return [[torch.randn(3, 6, 4, 9) * 0.5 - 2.0]]


def get_init_inputs():
    return [6]
