"""A grouped 2-D convolution followed by two clamps and a scaled mean over channels (keepdim)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 12, 3, stride=1, padding=1, groups=2)

    def forward(self, x):
        y = torch.clamp(torch.relu(self.conv(x)), max=2.0)
        return torch.mean(y, dim=1, keepdim=True) / 4.0


def get_inputs():
    return [torch.randn(2, 8, 10, 9)]


def get_input_variants():
    return [[torch.randn(1, 8, 5, 6)]]


def get_init_inputs():
    return []
