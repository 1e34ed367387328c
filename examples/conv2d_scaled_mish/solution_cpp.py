"""Conv2d 3x3 + per-channel-scaled Mish computed directly, the epilogue fused into the convolution.

The input is first copied into a buffer with a one-pixel border of zeros,
so no tap needs a bounds check. A task is a band of rows of one image for
four output channels; its sums live in a small buffer (about 16 KiB, in L1).
A band of the padded plane is contiguous, so for each input channel and
kernel row one vectorized loop runs over the whole band (the two padding
columns of each row are computed too, then dropped), with the three
horizontal taps of the four channels as twelve weights in registers. The
bias and activation are applied before the band is written, so the output
is written once.

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

constexpr int64_t kChannels = 4;     // output channels per task
constexpr int64_t kBandFloats = 1024; // about this many padded pixels per task: 4 channels of sums fit in L1

// Copies x into xp with a one-pixel border of zeros: (planes, height + 2, width + 2).
MULTIVERSION
static void pad_kernel(const float* x, float* xp, int64_t planes, int64_t height, int64_t width) {
    const int64_t pitch = width + 2;
#pragma omp parallel for schedule(static)
    for (int64_t plane = 0; plane < planes; ++plane) {
        float* out = xp + plane * (height + 2) * pitch;
        std::fill(out, out + pitch, 0.0f);
        std::fill(out + (height + 1) * pitch, out + (height + 2) * pitch, 0.0f);
        for (int64_t h = 0; h < height; ++h) {
            float* row = out + (h + 1) * pitch;
            row[0] = 0.0f;
            std::memcpy(row + 1, x + (plane * height + h) * width, sizeof(float) * width);
            row[width + 1] = 0.0f;
        }
    }
}

// xp: the padded input (batch, cin, height + 2, width + 2); w: (cout, cin, 3, 3); bias, scale: (cout);
// y: (batch, cout, height, width).
MULTIVERSION
static void conv_mish_kernel(const float* xp, const float* w, const float* bias, const float* scale, float* y,
                             int64_t batch, int64_t cin, int64_t cout, int64_t height, int64_t width) {
    const int64_t pitch = width + 2;
    const int64_t padded_plane = (height + 2) * pitch;
    const int64_t band_rows = std::max<int64_t>(1, std::min(height, kBandFloats / pitch));
    const int64_t bands = (height + band_rows - 1) / band_rows;
    const int64_t channel_blocks = (cout + kChannels - 1) / kChannels;
    const int64_t tasks = batch * channel_blocks * bands;
#pragma omp parallel
    {
        std::vector<float> sums(kChannels * band_rows * pitch);
#pragma omp for schedule(static)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t h0 = task % bands * band_rows;
            const int64_t rows = std::min(band_rows, height - h0);
            const int64_t o0 = (task / bands) % channel_blocks * kChannels;
            const int64_t b = task / (bands * channel_blocks);
            // Sums for the band's padded pixels p = r * pitch + c; the two columns past the width of
            // each row are computed and dropped. The last row stops at the width, so no read leaves the
            // plane.
            const int64_t span = rows * pitch - 2;
            // Past the last channel the block repeats it; those sums are not stored.
            const float* wo[kChannels];
            for (int64_t j = 0; j < kChannels; ++j) {
                wo[j] = w + std::min(o0 + j, cout - 1) * cin * 9;
            }
            const int64_t stride = band_rows * pitch;
            float* a0 = sums.data();
            float* a1 = a0 + stride;
            float* a2 = a1 + stride;
            float* a3 = a2 + stride;
            std::fill(sums.begin(), sums.end(), 0.0f);
            for (int64_t ic = 0; ic < cin; ++ic) {
                for (int64_t kh = 0; kh < 3; ++kh) {
                    // Padded row h0 + kh holds the taps of output row h0 in kernel row kh.
                    const float* xr = xp + (b * cin + ic) * padded_plane + (h0 + kh) * pitch;
                    const int64_t t = (ic * 3 + kh) * 3;
                    const float w00 = wo[0][t], w01 = wo[0][t + 1], w02 = wo[0][t + 2];
                    const float w10 = wo[1][t], w11 = wo[1][t + 1], w12 = wo[1][t + 2];
                    const float w20 = wo[2][t], w21 = wo[2][t + 1], w22 = wo[2][t + 2];
                    const float w30 = wo[3][t], w31 = wo[3][t + 1], w32 = wo[3][t + 2];
#pragma omp simd
                    for (int64_t q = 0; q < span; ++q) {
                        const float left = xr[q];
                        const float mid = xr[q + 1];
                        const float right = xr[q + 2];
                        a0[q] += w00 * left + w01 * mid + w02 * right;
                        a1[q] += w10 * left + w11 * mid + w12 * right;
                        a2[q] += w20 * left + w21 * mid + w22 * right;
                        a3[q] += w30 * left + w31 * mid + w32 * right;
                    }
                }
            }
            // v * tanh(softplus(v * scale)) with v = sum + bias.
            for (int64_t j = 0; j < kChannels && o0 + j < cout; ++j) {
                const int64_t o = o0 + j;
                const float bo = bias[o];
                const float so = scale[o];
                for (int64_t r = 0; r < rows; ++r) {
                    const float* acc = sums.data() + j * stride + r * pitch;
                    float* yr = y + ((b * cout + o) * height + h0 + r) * width;
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
    const int64_t batch = x.size(0);
    const int64_t cin = x.size(1);
    const int64_t height = x.size(2);
    const int64_t width = x.size(3);
    auto y = torch::empty({batch, weight.size(0), height, width}, x.options());
    if (y.numel() == 0) {
        return y;
    }
    auto xp = torch::empty({batch, cin, height + 2, width + 2}, x.options());
    pad_kernel(x.data_ptr<float>(), xp.data_ptr<float>(), batch * cin, height, width);
    conv_mish_kernel(xp.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                     scale.data_ptr<float>(), y.data_ptr<float>(), batch, cin, weight.size(0), height, width);
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
