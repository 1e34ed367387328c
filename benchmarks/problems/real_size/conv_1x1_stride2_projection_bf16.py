"""A ResNet projection shortcut in bfloat16: a strided 1x1 convolution 256 -> 512 channels, 56x56 down to 28x28,
batch 128, then batch norm with running statistics (no activation). About 26 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 128
CHANNELS_IN = 256
CHANNELS_OUT = 512
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.shortcut = nn.Sequential(
            nn.Conv2d(channels_in, channels_out, kernel_size=1, stride=2, bias=False),
            nn.BatchNorm2d(channels_out),
        )
        with torch.no_grad():
            self.shortcut[1].running_mean.uniform_(-0.5, 0.5)
            self.shortcut[1].running_var.uniform_(0.5, 2.0)
        self.to(torch.bfloat16)
        self.eval()

    def forward(self, x):
        return self.shortcut(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS_IN, SIDE, SIDE, dtype=torch.bfloat16)]


def get_init_inputs():
    return [CHANNELS_IN, CHANNELS_OUT]
