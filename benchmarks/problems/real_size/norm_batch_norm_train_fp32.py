"""Batch norm in training mode over a ResNet stage's activations: 256 channels of 56x56 at batch 64 (5.1e7 elements),
the batch's statistics normalize and the running ones move. About 411 MB moved per call, plus the statistics pass.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 256
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels, momentum=0.1)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE) * 2.0 + 0.5]


def get_init_inputs():
    return [CHANNELS]
