"""A convolution with ReLU, flattened into a linear classifier with a sigmoid: a view between two heavy ops."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, filters, size, classes):
        super().__init__()
        self.conv = nn.Conv2d(channels, filters, 3, padding=1)
        self.fc = nn.Linear(filters * size * size, classes)

    def forward(self, x):
        features = torch.relu(self.conv(x))
        return torch.sigmoid(self.fc(features.flatten(1)))


def get_inputs():
    return [torch.randn(5, 3, 6, 6)]


def get_input_variants():
    return [[torch.randn(1, 3, 6, 6)]]


def get_init_inputs():
    return [3, 4, 6, 7]
