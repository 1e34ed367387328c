"""BatchNorm2d in eval mode (fixed, non-trivial running statistics) on an image batch, then SiLU.

Family: normalizations (eval-mode batch norm: a per-channel affine map, memory-bound).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
CHANNELS = 64
HEIGHT = 32
WIDTH = 32

OUTPUT_SHAPES = [(BATCH, CHANNELS, HEIGHT, WIDTH)]


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.randn(channels) * 0.5)
            self.norm.running_var.copy_(torch.rand(channels) * 2.0 + 0.5)
            self.norm.weight.copy_(torch.rand(channels) + 0.5)
            self.norm.bias.copy_(torch.randn(channels) * 0.2)
        self.eval()

    def forward(self, x):
        return F.silu(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
