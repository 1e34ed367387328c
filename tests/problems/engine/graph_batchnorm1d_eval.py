"""Linear, batch norm with running statistics (evaluation mode), sigmoid, and a second linear."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.norm = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, features)
        with torch.no_grad():
            self.norm.running_mean.uniform_(-0.5, 0.5)
            self.norm.running_var.uniform_(0.5, 2.0)
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)
        self.eval()

    def forward(self, x):
        return self.fc2(torch.sigmoid(self.norm(self.fc1(x))))


def get_inputs():
    return [torch.randn(9, 12)]


def get_input_variants():
    return [[torch.randn(1, 12)]]


def get_init_inputs():
    return [12, 20]
