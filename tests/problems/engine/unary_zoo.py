"""Every pointwise op the engine knows, applied to one input and summed, so one check covers them all.

`x` takes any sign; `y` is positive (for log, sqrt and friends).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        signed = (-x + torch.abs(x) + torch.exp(x * 0.5) + torch.sin(x) + torch.cos(x) + torch.erf(x)
                  + torch.sigmoid(x) + torch.tanh(x) + torch.relu(x) + F.gelu(x) + F.gelu(x, approximate="tanh")
                  + F.silu(x) + F.mish(x) + F.softplus(x, beta=2.0, threshold=5.0) + F.leaky_relu(x, 0.2)
                  + F.elu(x, 0.7) + F.hardsigmoid(x) + F.hardswish(x) + torch.clamp(x, -0.5, 0.75)
                  + torch.expm1(x * 0.1) + x * x + torch.maximum(x, y * 0.5) + torch.minimum(x, -y))
        positive = (torch.log(y) + torch.log1p(y) + torch.sqrt(y) + torch.rsqrt(y) + torch.reciprocal(y)
                    + torch.pow(y, 1.7) + torch.pow(x, 3.0) * 0.1 + torch.pow(y, 0.5) + y / (x * x + 1.0))
        return signed + positive


def get_inputs():
    return [torch.randn(6, 30) * 3.0, torch.rand(6, 30) * 4.0 + 0.1]


def get_input_variants():
    return [[torch.randn(5, 7) * 6.0, torch.rand(5, 7) + 0.5]]


def get_init_inputs():
    return []
