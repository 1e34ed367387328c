"""3x3 max pooling with stride 2 and padding 1 on an image batch, after a ReLU.

Family: pooling (max_pool2d with stride and padding; the padded border never wins).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 64
HEIGHT = 64
WIDTH = 64

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT // 2, WIDTH // 2)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.max_pool2d(torch.relu(x), kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
