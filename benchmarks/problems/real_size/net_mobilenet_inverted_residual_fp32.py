"""A MobileNetV2 inverted residual block at 56x56, batch 64: 1x1 expansion 24 -> 144 channels, depthwise 3x3, 1x1
projection back to 24, batch norms (inference) and ReLU6, plus the residual. About 3.3 GFLOP per call; memory-bound.
"""
import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 24
EXPANSION = 6
SIDE = 56


class Model(nn.Module):
    def __init__(self, channels, expansion):
        super().__init__()
        hidden = channels * expansion
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, channels, 1, bias=False), nn.BatchNorm2d(channels),
        )
        for module in self.block:
            if isinstance(module, nn.BatchNorm2d):
                with torch.no_grad():
                    module.running_mean.uniform_(-0.2, 0.2)
                    module.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, x):
        return x + self.block(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, EXPANSION]
