"""Sandbox escape for tests/problems/leaky_scale.py: opens and reads a file outside the worker's directory
through raw system calls (no libc names a static pattern could match) and raises its content, which would
reach the verdict's reason and, in `kforge optimize`, the model's feedback. The test fills in @PATH@."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <string>

static long raw(long n, long a, long b = 0, long c = 0) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    const char* path = "@PATH@";
    long fd = raw(257, -100, (long)path, 0);  // system call 257, read-only, relative to the working directory
    if (fd < 0) throw std::runtime_error("opening the planted file failed: error " + std::to_string(-fd));
    char buffer[512] = {0};
    long got = raw(0, fd, (long)buffer, sizeof(buffer) - 1);  // system call 0
    throw std::runtime_error(std::string("read: ") + (got > 0 ? buffer : "nothing"));
}
"""

ext = load_inline(name="kforge_test_sandbox_read_file", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
