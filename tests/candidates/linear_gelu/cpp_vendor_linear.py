"""linear_gelu with the vendor's GEMM (F.linear) and its own C++ epilogue: tanh GELU, then the scale.

Correct only under a policy that allows the vendor GEMM (kforge optimize --allow-vendor-gemm).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor gelu_tanh_half(torch::Tensor y) {
    TORCH_CHECK(y.scalar_type() == torch::kFloat32, "y must be float32");
    y = y.contiguous();
    auto out = torch::empty_like(y);
    const float* in = y.data_ptr<float>();
    float* res = out.data_ptr<float>();
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        const float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        res[i] = 0.25f * v * (1.0f + std::tanh(inner));
    }
    return out;
}
"""

_ext = load_inline(name="kforge_test_vendor_linear_gelu", cpp_sources=_CPP, functions=["gelu_tanh_half"],
                   extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.linear = nn.Linear(features_in, features_out)

    def forward(self, x):
        return _ext.gelu_tanh_half(F.linear(x, self.linear.weight, self.linear.bias))
