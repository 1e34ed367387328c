"""Integer arithmetic with an integer result: remainders of negative numbers, int32 widened to int64, abs,
maximum, and a cast of floats to int64 (truncation toward zero)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, a, b):
        return torch.remainder(a * 3 - 7, 5) + torch.maximum(a, b).abs() - (x * 4.0).long() + (a % -4)


def get_inputs():
    return [torch.randn(24, 40), torch.randint(-50, 50, (24, 40)), torch.randint(-50, 50, (24, 40), dtype=torch.int32)]


def get_input_variants():
    return [[torch.randn(3, 17), torch.randint(-50, 50, (3, 17)), torch.randint(-50, 50, (3, 17), dtype=torch.int32)]]


def get_init_inputs():
    return []
