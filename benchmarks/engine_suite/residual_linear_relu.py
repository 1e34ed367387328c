"""A residual MLP block: x + fc2(relu(fc1(x))), the skip added after the second GEMM.

Family: residual blocks x + f(x) (the input read again in the last GEMM's epilogue).
"""
import torch
import torch.nn as nn

BATCH = 256
FEATURES = 512
HIDDEN = 768

OUTPUT_SHAPES = [(BATCH, FEATURES)]


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, features)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, HIDDEN]
