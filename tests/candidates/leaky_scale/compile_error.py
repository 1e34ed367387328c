"""Candidate whose C++ does not compile (a missing semicolon); built without torch's heavy headers."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
int leaky_scale_broken(int n) {
    int total = 0
    for (int i = 0; i < n; ++i) total += i;
    return total;
}
"""

ext = load_inline(name="kforge_test_broken", cpp_sources=CPP, is_python_module=False,
                  no_implicit_headers=True, extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return x
