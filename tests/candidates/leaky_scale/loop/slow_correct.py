"""Correct but slow: runs the honest kernel ten times per call (a loop test's first correct candidate)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
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

ext = load_inline(name="kforge_test_leaky_scale", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        for _ in range(10):
            out = ext.leaky_scale(x, self.scale)
        return out
