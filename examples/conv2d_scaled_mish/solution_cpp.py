"""Conv2d 3x3 + per-channel-scaled Mish computed directly, the epilogue fused into the convolution.

A task is one output row of four output channels of one image. Its sums
live in a small buffer (four rows of the output, in L1): for each input
channel and kernel row the three horizontal taps of the four channels are
twelve weights held in registers, and the interior of the row is one
vectorized loop; the two edge pixels, which see the zero padding, are done
with bounds checks. The bias and activation are applied before the row is
written, so the output is written once.

tanh(softplus(t)) = ((1 + e^t)^2 - 1) / ((1 + e^t)^2 + 1); with q = e^-t
this is (1 + 2q) / (1 + 2q + 2q^2), which needs no branch: for large t it
rounds to 1 (softplus is linear there), for very negative t to 0.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = r"""
#include <torch/extension.h>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

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
// The argument is clamped to [-87, 88] by comparing IEEE bit patterns as
// integers: a float compare here makes GCC split the loop into paths that it
// then refuses to vectorize under -ftrapping-math.
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

constexpr int64_t kChannels = 4;  // output channels per task

// One output pixel of one channel near the left or right edge: all nine taps with bounds checks.
static inline float edge_sum(const float* xb, const float* wo, int64_t cin, int64_t height, int64_t width,
                             int64_t h, int64_t col) {
    float acc = 0.0f;
    for (int64_t ic = 0; ic < cin; ++ic) {
        for (int64_t kh = 0; kh < 3; ++kh) {
            const int64_t hh = h + kh - 1;
            if (hh < 0 || hh >= height) {
                continue;
            }
            for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ww = col + kw - 1;
                if (ww >= 0 && ww < width) {
                    acc += wo[(ic * 3 + kh) * 3 + kw] * xb[(ic * height + hh) * width + ww];
                }
            }
        }
    }
    return acc;
}

// x: (batch, cin, height, width); w: (cout, cin, 3, 3); bias, scale: (cout); y: (batch, cout, height, width).
MULTIVERSION
static void conv_mish_kernel(const float* x, const float* w, const float* bias, const float* scale, float* y,
                             int64_t batch, int64_t cin, int64_t cout, int64_t height, int64_t width) {
    const int64_t channel_blocks = (cout + kChannels - 1) / kChannels;
    const int64_t tasks = batch * channel_blocks * height;
#pragma omp parallel
    {
        std::vector<float> sums(kChannels * width);
#pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t h = task % height;
            const int64_t o0 = (task / height) % channel_blocks * kChannels;
            const int64_t b = task / (height * channel_blocks);
            const float* xb = x + b * cin * height * width;
            // Past the last channel the block repeats it; those sums are not stored.
            const float* wo[kChannels];
            for (int64_t j = 0; j < kChannels; ++j) {
                wo[j] = w + std::min(o0 + j, cout - 1) * cin * 9;
            }
            float* a0 = sums.data();
            float* a1 = a0 + width;
            float* a2 = a1 + width;
            float* a3 = a2 + width;
            std::fill(sums.begin(), sums.end(), 0.0f);
            for (int64_t ic = 0; ic < cin; ++ic) {
                for (int64_t kh = 0; kh < 3; ++kh) {
                    const int64_t hh = h + kh - 1;
                    if (hh < 0 || hh >= height) {
                        continue;
                    }
                    const float* xr = xb + (ic * height + hh) * width;
                    const int64_t t = (ic * 3 + kh) * 3;
                    const float w00 = wo[0][t], w01 = wo[0][t + 1], w02 = wo[0][t + 2];
                    const float w10 = wo[1][t], w11 = wo[1][t + 1], w12 = wo[1][t + 2];
                    const float w20 = wo[2][t], w21 = wo[2][t + 1], w22 = wo[2][t + 2];
                    const float w30 = wo[3][t], w31 = wo[3][t + 1], w32 = wo[3][t + 2];
#pragma omp simd
                    for (int64_t c = 1; c < width - 1; ++c) {
                        const float left = xr[c - 1];
                        const float mid = xr[c];
                        const float right = xr[c + 1];
                        a0[c] += w00 * left + w01 * mid + w02 * right;
                        a1[c] += w10 * left + w11 * mid + w12 * right;
                        a2[c] += w20 * left + w21 * mid + w22 * right;
                        a3[c] += w30 * left + w31 * mid + w32 * right;
                    }
                }
            }
            for (int64_t j = 0; j < kChannels; ++j) {
                sums[j * width] = edge_sum(xb, wo[j], cin, height, width, h, 0);
                sums[j * width + width - 1] = edge_sum(xb, wo[j], cin, height, width, h, width - 1);
            }
            // v * tanh(softplus(v * scale)) with v = sum + bias.
            for (int64_t j = 0; j < kChannels && o0 + j < cout; ++j) {
                const int64_t o = o0 + j;
                const float* acc = sums.data() + j * width;
                float* yr = y + ((b * cout + o) * height + h) * width;
                const float bo = bias[o];
                const float so = scale[o];
#pragma omp simd
                for (int64_t c = 0; c < width; ++c) {
                    const float v = acc[c] + bo;
                    const float q = exp_approx(-v * so);
                    const float g = (1.0f + 2.0f * q) / (1.0f + 2.0f * q + 2.0f * q * q);
                    yr[c] = v * g;
                }
            }
        }
    }
}

torch::Tensor conv_scaled_mish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor scale) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() == 4, "x must be (batch, channels, height, width)");
    TORCH_CHECK(weight.dim() == 4 && weight.size(1) == x.size(1) && weight.size(2) == 3 && weight.size(3) == 3,
                "weight must be (out_channels, in_channels, 3, 3)");
    TORCH_CHECK(bias.numel() == weight.size(0) && scale.numel() == weight.size(0),
                "bias and scale need one value per output channel");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    scale = scale.contiguous();
    auto y = torch::empty({x.size(0), weight.size(0), x.size(2), x.size(3)}, x.options());
    if (y.numel() == 0) {
        return y;
    }
    conv_mish_kernel(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                     scale.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), weight.size(0),
                     x.size(2), x.size(3));
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_conv2d_scaled_mish",
    cpp_sources=_CPP,
    functions=["conv_scaled_mish"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        # Created in the order of Model, so a shared seed gives the same parameters.
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.scale = nn.Parameter(torch.rand(out_channels) * 1.5 + 0.5)

    def forward(self, x):
        conv = self.conv
        if conv.stride != (1, 1) or conv.padding != (1, 1) or conv.dilation != (1, 1) or conv.groups != 1:
            raise ValueError("this kernel computes a 3x3 convolution with stride 1, padding 1, one group")
        return _ext.conv_scaled_mish(x, conv.weight, conv.bias, self.scale)
