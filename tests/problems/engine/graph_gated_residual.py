"""Two linears of one input gate each other, the result added back to the input and layer-normalized."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.value = nn.Linear(features, features)
        self.gate = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        mixed = x + self.value(x) * torch.sigmoid(self.gate(x))
        return self.norm(mixed)


def get_inputs():
    return [torch.randn(11, 48)]


def get_input_variants():
    return [[torch.randn(2, 3, 48)]]


def get_init_inputs():
    return [48]
