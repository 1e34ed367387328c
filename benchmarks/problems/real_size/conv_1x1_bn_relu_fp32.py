"""The channel-reducing 1x1 convolution of a ResNet bottleneck at its first stage: 256 -> 64 channels on 56x56 maps,
batch 64, then batch norm with running statistics and ReLU. About 6.6 GFLOP and 260 MB moved per call.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS_IN = 256
CHANNELS_OUT = 64
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.reduce = nn.Conv2d(channels_in, channels_out, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(channels_out)
        with torch.no_grad():  # statistics as a trained network has them, not the identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.25, 0.25)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.reduce(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS_IN, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS_IN, CHANNELS_OUT]
