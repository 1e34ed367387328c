"""A causal depthwise convolution (pad both sides, keep the first `length` outputs) followed by SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, taps):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, taps, groups=channels, padding=taps - 1)

    def forward(self, x):
        return F.silu(self.conv(x)[..., : x.shape[-1]])


def get_inputs():
    return [torch.randn(2, 5, 30)]


def get_input_variants():
    return [[torch.randn(3, 5, 1)], [torch.randn(1, 5, 601)]]


def get_init_inputs():
    return [5, 4]
