"""An image stem: a 5x5 stride-2 convolution, BatchNorm2d in eval mode, ReLU, then 3x3 stride-2 max pooling.

Family: whole small networks (conv-norm-relu-pool: a convolution whose epilogue holds a folded norm).
"""
import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 3
OUT_CHANNELS = 32
SIZE = 96

OUTPUT_SHAPES = [(BATCH, OUT_CHANNELS, SIZE // 4, SIZE // 4)]


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 5, stride=2, padding=2, bias=False)
        self.norm = nn.BatchNorm2d(out_channels)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.randn(out_channels) * 0.1)
            self.norm.running_var.copy_(torch.rand(out_channels) + 0.5)
            self.norm.weight.copy_(torch.rand(out_channels) + 0.5)
            self.norm.bias.copy_(torch.randn(out_channels) * 0.1)
        self.eval()

    def forward(self, x):
        return self.pool(torch.relu(self.norm(self.conv(x))))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
