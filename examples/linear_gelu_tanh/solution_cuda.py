"""Linear + GELU(tanh) in one CUDA kernel: a tiled float32 product with bias and activation in the epilogue.

A block computes a 32 x 32 tile of the output with 256 threads, 2 x 2 outputs each, staging 32-deep
slices of x and W in shared memory (both are contiguous along the reduction axis, so each is stored
transposed, padded by one word against bank conflicts). Plain float32 FMAs, no TF32: float32's tolerance
does not allow it. GELU(tanh) is v * sigmoid(2u) = v / (1 + exp(-2u)).
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_DECLARATIONS = "torch::Tensor linear_gelu_tanh(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);"

_KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

constexpr int kTile = 32;     // output rows and columns per block
constexpr int kDepth = 32;    // reduction steps staged per round
constexpr int kThreads = 256; // a 16 x 16 grid of threads, each with 2 x 2 outputs

// x: (n, k), w: (m, k) as stored by nn.Linear, b: (m), y: (n, m).
__global__ void __launch_bounds__(kThreads) linear_gelu_kernel(const float* __restrict__ x,
                                                               const float* __restrict__ w,
                                                               const float* __restrict__ b,
                                                               float* __restrict__ y, int n, int m, int k) {
    __shared__ float xs[kDepth][kTile + 1];
    __shared__ float ws[kDepth][kTile + 1];
    const int tx = threadIdx.x % 16;
    const int ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * kTile;
    const int col0 = blockIdx.x * kTile;
    float acc00 = 0.0f, acc01 = 0.0f, acc10 = 0.0f, acc11 = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kDepth) {
        // Consecutive threads read consecutive k of one row: coalesced loads, conflict-free stores.
        for (int e = threadIdx.x; e < kTile * kDepth; e += kThreads) {
            const int r = e / kDepth;
            const int d = e % kDepth;
            const int gk = k0 + d;
            xs[d][r] = (row0 + r < n && gk < k) ? x[static_cast<int64_t>(row0 + r) * k + gk] : 0.0f;
            ws[d][r] = (col0 + r < m && gk < k) ? w[static_cast<int64_t>(col0 + r) * k + gk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int d = 0; d < kDepth; ++d) {
            const float a0 = xs[d][ty];
            const float a1 = xs[d][ty + 16];
            const float b0 = ws[d][tx];
            const float b1 = ws[d][tx + 16];
            acc00 = fmaf(a0, b0, acc00);
            acc01 = fmaf(a0, b1, acc01);
            acc10 = fmaf(a1, b0, acc10);
            acc11 = fmaf(a1, b1, acc11);
        }
        __syncthreads();
    }
    const float acc[2][2] = {{acc00, acc01}, {acc10, acc11}};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int r = row0 + ty + 16 * i;
            const int c = col0 + tx + 16 * j;
            if (r < n && c < m) {
                const float v = acc[i][j] + b[c];
                const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
                y[static_cast<int64_t>(r) * m + c] = v / (1.0f + expf(-2.0f * u));
            }
        }
    }
}

torch::Tensor linear_gelu_tanh(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1),
                "x (..., in_features) does not match weight (out_features, in_features)");
    TORCH_CHECK(bias.numel() == weight.size(0), "bias needs out_features values");
    const c10::cuda::CUDAGuard guard(x.device());
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    const int64_t k = weight.size(1);
    const int64_t m = weight.size(0);
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = m;
    auto y = torch::empty(out_sizes, x.options());
    if (y.numel() == 0) {
        return y;
    }
    const int64_t n = y.numel() / m;
    TORCH_CHECK(n < (1LL << 31) && m < (1LL << 31) && k < (1LL << 31), "sizes must fit in 32 bits");
    const dim3 grid(static_cast<unsigned int>((m + kTile - 1) / kTile),
                    static_cast<unsigned int>((n + kTile - 1) / kTile));
    linear_gelu_kernel<<<grid, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
        static_cast<int>(n), static_cast<int>(m), static_cast<int>(k));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_linear_gelu_tanh_cuda",
    cpp_sources=_DECLARATIONS,
    cuda_sources=_KERNELS,
    functions=["linear_gelu_tanh"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Same layer as Model, so a shared seed gives the same weight and bias.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _ext.linear_gelu_tanh(x, self.linear.weight, self.linear.bias)
