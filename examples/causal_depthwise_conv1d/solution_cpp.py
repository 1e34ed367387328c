"""Causal depthwise conv1d computed directly, without the padded output.

Eager PyTorch pads both sides, computes L + K - 1 outputs per channel and
then slices off the tail. Here each (batch, channel) row is one task: the
first K - 1 outputs, which see the implicit zeros, are done tap by tap with
bounds checks; the rest loop tap-outer / time-inner so the time loop is a
plain vectorizable axpy over a row that stays in L1.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cstdint>

// -O3 alone targets baseline x86-64 (SSE2, four floats per vector). On
// Linux/GCC also build an AVX2+FMA copy of each kernel; the dynamic loader
// picks it where the CPU supports it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MULTIVERSION
#endif

// x, y: (rows, length) with row = batch * channels + c; w: (channels, taps).
MULTIVERSION
static void causal_dwconv_kernel(const float* x, const float* w, const float* bias, float* y,
                                 int64_t rows, int64_t channels, int64_t length, int64_t taps) {
    const int64_t warmup = std::min(taps - 1, length);
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t c = row % channels;
        const float* wc = w + c * taps;
        const float* xr = x + row * length;
        float* yr = y + row * length;
        for (int64_t t = 0; t < warmup; ++t) {
            float acc = bias[c];
            for (int64_t j = taps - 1 - t; j < taps; ++j) {
                acc += wc[j] * xr[t - (taps - 1) + j];
            }
            yr[t] = acc;
        }
        for (int64_t t = warmup; t < length; ++t) {
            yr[t] = bias[c];
        }
        for (int64_t j = 0; j < taps; ++j) {
            const float wj = wc[j];
            const float* xs = xr + j - (taps - 1);  // xs[t] = x[t - (taps - 1) + j]
#pragma omp simd
            for (int64_t t = warmup; t < length; ++t) {
                yr[t] += wj * xs[t];
            }
        }
    }
}

torch::Tensor causal_dwconv1d(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 3, "x must be (batch, channels, length)");
    TORCH_CHECK(weight.dim() == 3 && weight.size(0) == x.size(1) && weight.size(1) == 1,
                "weight must be (channels, 1, taps) for a depthwise conv");
    TORCH_CHECK(bias.numel() == x.size(1), "bias needs one value per channel");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    auto y = torch::empty_like(x);
    if (y.numel() == 0) {
        return y;
    }
    causal_dwconv_kernel(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                         y.data_ptr<float>(), x.size(0) * x.size(1), x.size(1), x.size(2),
                         weight.size(2));
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_causal_depthwise_conv1d",
    cpp_sources=_CPP,
    functions=["causal_dwconv1d"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        # Same layer as Model, so a shared seed gives the same weight and bias.
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, groups=channels, padding=kernel_size - 1
        )

    def forward(self, x):
        return _ext.causal_dwconv1d(x, self.conv.weight, self.conv.bias)
