"""Scans: a weighted running sum, a running product of values near one, and a running maximum (values only),
with a one-dimensional max pooling beside them."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(width) + 0.5)

    def forward(self, x):
        total = torch.cumsum(x * self.weight, dim=1)
        product = torch.cumprod(1.0 + 0.05 * x, dim=0)
        peak = torch.cummax(x, dim=-1).values - x
        pooled = F.max_pool1d(x.unsqueeze(1), 3, stride=2, padding=1, dilation=1)
        return total, product, peak, pooled


def get_inputs():
    return [torch.randn(5, 37)]


def get_init_inputs():
    return [37]
