"""A 2x2x2 stride-2 Conv3d that cuts a volume into patches (halving D, H and W), then y * sigmoid(1.702 * y).

Family: 3-D convolutions (a non-overlapping strided kernel, i.e. a patch embedding, with an activation).
"""
import torch
import torch.nn as nn

BATCH = 4
IN_CHANNELS = 16
OUT_CHANNELS = 64
DEPTH = 16
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, DEPTH // 2, HEIGHT // 2, WIDTH // 2)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 2, stride=2)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(1.702 * y)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
