"""A float16 linear with a GELU, and its row maxima as a second output: half precision on a backend that computes
in float32 (the C++ one), with parameters, inputs and both outputs in float16."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.linear = nn.Linear(features, hidden)
        self.half()

    def forward(self, x):
        y = torch.nn.functional.gelu(self.linear(x))
        return y, y.amax(dim=1)


def get_inputs():
    return [torch.randn(5, 24).half()]


def get_input_variants():
    return [[torch.randn(3, 24).half()]]


def get_init_inputs():
    return [24, 17]
