"""A pointwise result made before a scan and added to the scan's: the sum joins the first kernel, after the scan."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        scaled = torch.tanh(x) * 0.5
        running = torch.cumsum(x, dim=1)
        return scaled + running


def get_inputs():
    return [torch.randn(4, 37)]


def get_input_variants():
    return [[torch.randn(1, 5)], [torch.randn(6, 64)]]


def get_init_inputs():
    return []
