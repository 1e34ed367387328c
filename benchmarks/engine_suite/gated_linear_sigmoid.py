"""Two parallel linear layers on one input, combined as a gate: value * sigmoid(gate).

Family: several heavy ops per forward (two independent GEMMs sharing an input, joined pointwise).
"""
import torch
import torch.nn as nn

BATCH = 256
IN_FEATURES = 768
OUT_FEATURES = 768

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.value = nn.Linear(in_features, out_features)
        self.gate = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.value(x) * torch.sigmoid(self.gate(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
