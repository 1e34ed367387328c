"""A ResNet stem on ImageNet-sized images: 7x7 stride-2 convolution 3 -> 64 channels, batch norm (running statistics),
ReLU and 3x3 stride-2 max pooling, 224x224 down to 56x56 at batch 64. About 15 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 64
IMAGE = 224
WIDTH = 64


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn = nn.BatchNorm2d(width)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.eval()

    def forward(self, images):
        return self.pool(torch.relu(self.bn(self.conv(images))))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [WIDTH]
