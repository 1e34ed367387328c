"""A LeNet-style classifier on 32x32 colour images: two conv + ReLU + max-pool stages, flatten, three linears.

Family: whole small networks (convolutions, pooling, a flatten and GEMMs in one graph).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_CHANNELS = 3
SIZE = 32
CHANNELS1 = 16
CHANNELS2 = 32
HIDDEN1 = 256
HIDDEN2 = 64
CLASSES = 10
# 32 -> conv 5x5 pad 2 -> 32 -> pool -> 16 -> conv 3x3 -> 14 -> pool -> 7
FLAT = CHANNELS2 * 7 * 7

OUTPUT_SHAPES = [(BATCH, CLASSES)]


class Model(nn.Module):
    def __init__(self, in_channels, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, CHANNELS1, 5, padding=2)
        self.conv2 = nn.Conv2d(CHANNELS1, CHANNELS2, 3)
        self.fc1 = nn.Linear(FLAT, HIDDEN1)
        self.fc2 = nn.Linear(HIDDEN1, HIDDEN2)
        self.fc3 = nn.Linear(HIDDEN2, classes)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, CLASSES]
