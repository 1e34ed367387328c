"""Sandbox escape for tests/problems/leaky_scale.py: creates and writes a file at @PATH@, outside the
worker's directory, with raw system calls (a planted script or a changed project file would outlive the
evaluation). It raises what happened."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <string>

static long raw(long n, long a, long b = 0, long c = 0, long d = 0) {
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    const char* path = "@PATH@";
    long fd = raw(257, -100, (long)path, 01 | 0100 | 01000, 0644);  // system call 257: write-only, create, truncate
    if (fd < 0) throw std::runtime_error("opening for writing failed: error " + std::to_string(-fd));
    const char text[] = "escaped\n";
    raw(1, fd, (long)text, sizeof(text) - 1);
    throw std::runtime_error("wrote the file");
}
"""

ext = load_inline(name="kforge_test_sandbox_write_outside", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
