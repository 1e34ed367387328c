"""Delegation beneath ATen's dispatcher (issue 38) for tests/problems/leaky_scale.py: the C++ calls the CPU
kernels of mul and leaky_relu directly (`at::cpu::`), which no operator recorder sees, so with the static policy
off it is judged correct with no rule fired. The static policy refuses every ATen name beyond allocation,
layout and devices (static.cpp-framework-call)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <ATen/CPUFunctions.h>

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    return at::cpu::leaky_relu(at::cpu::mul(x, scale), 0.1);
}
"""

ext = load_inline(name="kforge_test_below_dispatcher", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
