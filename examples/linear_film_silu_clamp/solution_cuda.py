"""Linear + per-feature scale/shift + SiLU + clamp + skip in one CUDA kernel, the epilogue on the tile.

A block computes a 32 x 32 tile of the output with 256 threads, 2 x 2 outputs each, staging 32-deep
slices of x and W in shared memory (both are contiguous along the reduction axis, so each is stored
transposed, padded by one word against bank conflicts). Plain float32 FMAs, no TF32: float32's tolerance
does not allow it. The six pointwise ops run on the accumulators before the one store; silu(z) is
z / (1 + exp(-z)).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_DECLARATIONS = ("torch::Tensor linear_film(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
                 "torch::Tensor gamma, torch::Tensor beta);")

_KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

constexpr int kTile = 32;     // output rows and columns per block
constexpr int kDepth = 32;    // reduction steps staged per round
constexpr int kThreads = 256; // a 16 x 16 grid of threads, each with 2 x 2 outputs

// clamp(silu(h * gamma + beta), -0.25, 4) + 0.25 * h
__device__ __forceinline__ float film(float h, float gamma, float beta) {
    const float z = h * gamma + beta;
    const float s = z / (1.0f + expf(-z));
    return fminf(fmaxf(s, -0.25f), 4.0f) + 0.25f * h;
}

// x: (n, k), w: (m, k) as stored by nn.Linear; b, gamma, beta: (m); y: (n, m).
__global__ void __launch_bounds__(kThreads) linear_film_kernel(const float* __restrict__ x,
                                                               const float* __restrict__ w,
                                                               const float* __restrict__ b,
                                                               const float* __restrict__ gamma,
                                                               const float* __restrict__ beta,
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
                y[static_cast<int64_t>(r) * m + c] = film(acc[i][j] + b[c], gamma[c], beta[c]);
            }
        }
    }
}

torch::Tensor linear_film(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor gamma,
                          torch::Tensor beta) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1),
                "x (..., in_features) does not match weight (out_features, in_features)");
    TORCH_CHECK(bias.numel() == weight.size(0) && gamma.numel() == weight.size(0) &&
                    beta.numel() == weight.size(0),
                "bias, gamma and beta need out_features values each");
    const c10::cuda::CUDAGuard guard(x.device());
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    gamma = gamma.contiguous();
    beta = beta.contiguous();
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
    TORCH_CHECK((n + kTile - 1) / kTile <= 65535, "too many rows for one grid column");
    const dim3 grid(static_cast<unsigned int>((m + kTile - 1) / kTile),
                    static_cast<unsigned int>((n + kTile - 1) / kTile));
    linear_film_kernel<<<grid, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), gamma.data_ptr<float>(),
        beta.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_linear_film_silu_clamp_cuda",
    cpp_sources=_DECLARATIONS,
    cuda_sources=_KERNELS,
    functions=["linear_film"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Created in the order of Model, so a shared seed gives the same parameters.
        self.linear = nn.Linear(in_features, out_features)
        self.gamma = nn.Parameter(torch.rand(out_features) * 4.0 + 1.0)
        self.beta = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x):
        return _ext.linear_film(x, self.linear.weight, self.linear.bias, self.gamma, self.beta)
