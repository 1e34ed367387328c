"""An MLP classifier: 784 -> 512 -> 256 -> 10 with ReLUs, ending in a log-softmax over the classes.

Family: whole small networks (three GEMMs, activations, and a row reduction at the end).
"""
import torch
import torch.nn as nn

BATCH = 256
IN_FEATURES = 784
HIDDEN1 = 512
HIDDEN2 = 256
CLASSES = 10

OUTPUT_SHAPES = [(BATCH, CLASSES)]


class Model(nn.Module):
    def __init__(self, in_features, hidden1, hidden2, classes):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_features, hidden1),
            nn.ReLU(),
            nn.Linear(hidden1, hidden2),
            nn.ReLU(),
            nn.Linear(hidden2, classes),
        )

    def forward(self, x):
        return torch.log_softmax(self.layers(x), dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN1, HIDDEN2, CLASSES]
