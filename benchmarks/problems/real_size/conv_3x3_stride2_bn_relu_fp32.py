"""The strided 3x3 convolution that opens a ResNet-50 stage: 128 channels, 56x56 down to 28x28, batch 64, with
batch norm (running statistics) and ReLU. About 15 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 128
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.relu = nn.ReLU(inplace=True)
        self.eval()

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS]
