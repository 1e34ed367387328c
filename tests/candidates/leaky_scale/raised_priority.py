"""Trick candidate for tests/problems/leaky_scale.py: honest, but its C++ raises the priority of the
thread that calls it (nice -5), so that on a busy machine it gets more of the CPU than the reference."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <sys/resource.h>

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    static const int raised = setpriority(PRIO_PROCESS, 0, -5);
    (void)raised;
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t cols = scale.numel();
    const int64_t rows = xc.numel() / cols;
    const float* px = xc.data_ptr<float>();
    const float* ps = scale.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            float y = px[r * cols + c] * ps[c];
            po[r * cols + c] = y > 0.0f ? y : 0.1f * y;
        }
    }
    return out;
}
"""

ext = load_inline(name="kforge_test_leaky_scale_priority", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
