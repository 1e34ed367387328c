"""Causal depthwise 1-D convolution with bias.

y[b, c, t] = bias[c] + sum_k w[c, k] * x[b, c, t - (K - 1) + k]   (x = 0 for t < 0)

The short convolution used in front of the sequence mixer in Mamba and
Hyena style blocks: each channel has its own filter and sees only the past.
"""
import torch
import torch.nn as nn

BATCH = 4
CHANNELS = 64
LENGTH = 1024
KERNEL_SIZE = 7


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, groups=channels, padding=kernel_size - 1
        )

    def forward(self, x):
        # Padding both sides then dropping the tail keeps only causal outputs.
        return self.conv(x)[..., : x.shape[-1]]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_input_variants():
    # An odd length, and a sequence shorter than the kernel.
    return [
        [torch.randn(3, CHANNELS, 999)],
        [torch.randn(2, CHANNELS, 5)],
    ]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE]
