"""A three-layer MLP with a different activation after each hidden layer: tanh, then ReLU, then none.

Family: several heavy ops per forward (three GEMMs of decreasing width).
"""
import torch
import torch.nn as nn

BATCH = 128
IN_FEATURES = 384
HIDDEN1 = 768
HIDDEN2 = 512
OUT_FEATURES = 256

OUTPUT_SHAPES = [(BATCH, OUT_FEATURES)]


class Model(nn.Module):
    def __init__(self, in_features, hidden1, hidden2, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden1)
        self.fc2 = nn.Linear(hidden1, hidden2)
        self.fc3 = nn.Linear(hidden2, out_features)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN1, HIDDEN2, OUT_FEATURES]
