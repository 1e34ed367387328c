"""The depthwise 3x3 convolution of a MobileNetV2 block: 144 channels, one filter each, on 56x56 maps at batch 128,
with batch norm (running statistics) and ReLU6. Memory-bound: about 1 GFLOP and 460 MB moved per call.
"""
import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 144
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, kernel_size=3, padding=1, groups=channels, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.act = nn.ReLU6()
        self.eval()

    def forward(self, x):
        return self.act(self.bn(self.depthwise(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS]
