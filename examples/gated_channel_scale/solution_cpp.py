"""Fused per-channel gate: one read of x, one write of y, no temporaries.

Eager PyTorch runs four elementwise kernels (x*scale, sigmoid, multiply,
add) and allocates three intermediates; here each element is finished in
registers. x * sigmoid(x * s) is computed as x / (1 + exp(-x * s)).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>
#include <cstdint>
#include <cstring>

// -O3 alone targets baseline x86-64 (SSE2, four floats per vector). On
// Linux/GCC also build an AVX2+FMA copy of each kernel; the dynamic loader
// picks it where the CPU supports it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MULTIVERSION
#endif

// e^x for float x, about 1 ulp: e^x = 2^k * e^r with |r| <= ln2/2 and the
// Cephes expf polynomial for e^r. std::exp would keep the loops scalar.
// The argument is clamped to [-87, 88] (so the result saturates near
// FLT_MIN / FLT_MAX and NaN is not propagated) by comparing IEEE bit
// patterns as integers: a float compare here makes GCC split the loop into
// paths that it then refuses to vectorize under -ftrapping-math.
static inline float exp_approx(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof(u));
    u = u < 0xC2AE0000u ? u : 0xC2AE0000u;  // -87.0f; negatives sort above positives
    int32_t s = static_cast<int32_t>(u);
    s = s < 0x42B00000 ? s : 0x42B00000;    // 88.0f; negatives are < 0 here
    std::memcpy(&x, &s, sizeof(x));
    // Adding and removing 1.5 * 2^23 rounds to the nearest integer.
    const float round_magic = 12582912.0f;
    const float k = (x * 1.44269504089f + round_magic) - round_magic;
    float r = x - k * 0.693359375f;  // ln2 split in two so r stays exact
    r = r + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
    float two_k;
    std::memcpy(&two_k, &bits, sizeof(two_k));
    return p * two_k;
}

MULTIVERSION
static void gate_kernel(const float* x, const float* scale, const float* shift,
                        float* y, int64_t rows, int64_t channels, int64_t length) {
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t c = row % channels;
        const float neg_s = -scale[c];
        const float b = shift[c];
        const float* xr = x + row * length;
        float* yr = y + row * length;
#pragma omp simd
        for (int64_t t = 0; t < length; ++t) {
            const float v = xr[t];
            yr[t] = v / (1.0f + exp_approx(v * neg_s)) + b;
        }
    }
}

torch::Tensor gated_channel_scale(torch::Tensor x, torch::Tensor scale, torch::Tensor shift) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 3, "x must be (batch, channels, length)");
    TORCH_CHECK(scale.numel() == x.size(1) && shift.numel() == x.size(1),
                "scale and shift need one value per channel");
    x = x.contiguous();
    scale = scale.contiguous();
    shift = shift.contiguous();
    auto y = torch::empty_like(x);
    gate_kernel(x.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(),
                y.data_ptr<float>(), x.size(0) * x.size(1), x.size(1), x.size(2));
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_gated_channel_scale",
    cpp_sources=_CPP,
    functions=["gated_channel_scale"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        # Same creation order as Model, so a shared seed gives equal parameters.
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)
        self.shift = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x):
        return _ext.gated_channel_scale(x, self.scale, self.shift)
