"""Trick candidate for tests/problems/leaky_scale.py: honest, but it loosens torch's float32 matmul
precision and turns TF32 on through an alias the static policy does not follow: under --allow-vendor-gemm its
GEMMs would run in TF32 or bf16 while the reference's do not."""

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


torch.set_float32_matmul_precision("medium")
matmul_settings = torch.backends.cuda.matmul
matmul_settings.allow_tf32 = True


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale(x, self.scale)
