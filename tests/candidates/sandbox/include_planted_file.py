"""Sandbox escape for tests/problems/leaky_scale.py: its C++ includes a file outside the project (@PATH@), so
that the compiler's error quotes the file's first lines back in the verdict and the model's feedback."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include "@PATH@"

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    return x;
}
"""

ext = load_inline(name="kforge_test_sandbox_include", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
