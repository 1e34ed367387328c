"""A four-layer fp32 MLP on a batch of 4096: 2048 -> 4096 -> 4096 -> 4096 -> 1024 with ReLU between the layers.
Four GEMMs in a row, about 380 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 2048
HIDDEN = 4096
OUT_FEATURES = 1024


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, out_features),
        )

    def forward(self, x):
        return self.layers(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN, OUT_FEATURES]
