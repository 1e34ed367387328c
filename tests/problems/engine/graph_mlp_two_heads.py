"""A three-layer MLP (ReLU, then tanh) returning its logits and their log-softmax: three GEMMs, two outputs."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(features_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        logits = self.head(h)
        return logits, torch.log_softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(19, 40)]


def get_input_variants():
    return [[torch.randn(3, 40)], [torch.randn(2, 5, 40)]]


def get_init_inputs():
    return [40, 72, 13]
