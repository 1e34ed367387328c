"""Trick candidate for tests/problems/leaky_scale.py: after its first 12 calls (the correctness trials and the
start of timing) the C++ returns an empty output at once and fills it on a detached native thread, out of
Python's sight (threading.active_count does not count it), so the timer stops before the work is done."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <chrono>
#include <thread>

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    auto xc = x.contiguous();
    auto sc = scale.contiguous();
    auto out = torch::empty_like(xc);
    static int calls = 0;
    auto work = [xc, sc, out]() mutable {
        const int64_t cols = sc.numel();
        const int64_t total = xc.numel();
        const float* px = xc.data_ptr<float>();
        const float* ps = sc.data_ptr<float>();
        float* po = out.data_ptr<float>();
        for (int64_t i = 0; i < total; ++i) {
            float y = px[i] * ps[i % cols];
            po[i] = y > 0.0f ? y : 0.1f * y;
        }
    };
    if (++calls <= 12) {
        work();
    } else {
        // Late, as a long kernel's work would be: the timer has long stopped when the output is written.
        std::thread([work]() mutable {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            work();
        }).detach();
    }
    return out;
}
"""

ext = load_inline(name="kforge_test_leaky_scale_native_thread", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
