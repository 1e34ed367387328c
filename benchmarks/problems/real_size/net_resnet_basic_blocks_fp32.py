"""Two ResNet basic blocks (3x3 conv, batch norm, ReLU, 3x3 conv, batch norm, identity shortcut, ReLU) at 128 channels
on 28x28 maps, batch 64, inference mode. Four convolutions, about 59 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 128
SIDE = 28
BLOCKS = 2


def _trained_bn(channels):
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.3, 1.0)
        bn.bias.uniform_(-0.2, 0.2)
    return bn


class BasicBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv_a = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_a = _trained_bn(channels)
        self.conv_b = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn_b = _trained_bn(channels)

    def forward(self, x):
        y = torch.relu(self.bn_a(self.conv_a(x)))
        return torch.relu(x + self.bn_b(self.conv_b(y)))


class Model(nn.Module):
    def __init__(self, channels, blocks):
        super().__init__()
        self.blocks = nn.Sequential(*[BasicBlock(channels) for _ in range(blocks)])
        self.eval()

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.relu(torch.randn(BATCH, CHANNELS, SIDE, SIDE))]


def get_init_inputs():
    return [CHANNELS, BLOCKS]
