"""A reconstruction loss over a batch of images: mean((prediction - target)^2) over 64 x 3 x 512 x 512 fp32 values
(5.0e7 elements each) down to one scalar. About 403 MB read per call.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 3
SIDE = 512


class Model(nn.Module):
    def forward(self, prediction, target):
        return ((prediction - target) ** 2).mean()


def get_inputs():
    target = torch.rand(BATCH, CHANNELS, SIDE, SIDE)
    return [target + 0.1 * torch.randn(BATCH, CHANNELS, SIDE, SIDE), target]


def get_init_inputs():
    return []
