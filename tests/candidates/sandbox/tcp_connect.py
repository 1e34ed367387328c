"""Sandbox escape for tests/problems/leaky_scale.py: opens a TCP connection to 127.0.0.1:@PORT@ with raw
system calls and sends a message (a way out for anything it could read). The test listens on that port."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <string>

static long raw(long n, long a = 0, long b = 0, long c = 0) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    long fd = raw(41, 2, 1, 0);  // system call 41: an IPv4 stream
    if (fd < 0) throw std::runtime_error("creating the endpoint failed: error " + std::to_string(-fd));
    unsigned char address[16] = {2, 0, (unsigned char)(@PORT@ >> 8), (unsigned char)(@PORT@ & 255), 127, 0, 0, 1};
    long connected = raw(42, fd, (long)address, sizeof(address));  // system call 42
    if (connected < 0) throw std::runtime_error("reaching the listener failed: error " + std::to_string(-connected));
    const char message[] = "escaped the sandbox";
    raw(1, fd, (long)message, sizeof(message) - 1);  // system call 1
    throw std::runtime_error("connected and sent the message");
}
"""

ext = load_inline(name="kforge_test_sandbox_tcp_connect", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
