"""Sandbox escape for tests/problems/leaky_scale.py: forks and executes /bin/sh with raw system calls; the
shell writes a proof file at @PATH@, outside the worker's directory. It does so twice: while it is imported
(the build phase, where programs may run: Landlock keeps the shell from writing outside), and in its forward
(the run phase, where fork and exec are refused), where it also tries to replace the worker by the shell. It
raises what happened each time."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <string>

static long raw(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

static const char* argv[] = {"/bin/sh", "-c", "echo escaped > '@PATH@'", nullptr};
static const char* envp[] = {nullptr};

static std::string shell() {
    long child = raw(57);  // system call 57
    if (child < 0) return "fork failed: error " + std::to_string(-child);
    if (child == 0) {
        long error = raw(59, (long)argv[0], (long)argv, (long)envp);  // system call 59
        raw(60, 100 + (-error));  // system call 60, with 100 + why 59 failed
    }
    int status = 0;
    raw(61, child, (long)&status, 0, 0);  // system call 61
    return "the shell ended with status " + std::to_string((status >> 8) & 255);
}

std::string at_load() { return shell(); }

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale, std::string loaded) {
    std::string forward = shell();
    long error = raw(59, (long)argv[0], (long)argv, (long)envp);  // no fork: the worker itself becomes the shell
    throw std::runtime_error("at load: " + loaded + "; in forward: " + forward + "; exec failed: error " +
                             std::to_string(-error));
}
"""

ext = load_inline(name="kforge_test_sandbox_fork_exec", cpp_sources=CPP, functions=["at_load", "leaky_scale"],
                  extra_cflags=["-O1"])
LOADED = ext.at_load()


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale, LOADED)
