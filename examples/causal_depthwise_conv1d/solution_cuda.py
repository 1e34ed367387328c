"""Causal depthwise conv1d in CUDA, computed directly without the padded output.

A block computes 256 consecutive outputs of one (batch, channel) row, one per thread. It first stages
the input window those outputs need (256 + K - 1 values, zeros before the start of the row) and the
channel's K weights in shared memory, so each input is read from memory once and reused K times.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_DECLARATIONS = "torch::Tensor causal_dwconv1d(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);"

_KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

constexpr int kTile = 256;  // outputs per block, one per thread

// grid (rows, tiles); dynamic shared memory holds the window x[t0 - (taps - 1), t0 + kTile) and the taps.
__global__ void causal_dwconv_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ bias, float* __restrict__ y,
                                     int64_t channels, int64_t length, int taps) {
    extern __shared__ float shared[];
    float* window = shared;
    float* weights = shared + kTile + taps - 1;
    const int64_t row = blockIdx.x;
    const int64_t c = row % channels;
    const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTile;
    const float* xr = x + row * length;
    for (int j = threadIdx.x; j < kTile + taps - 1; j += blockDim.x) {
        const int64_t t = t0 - (taps - 1) + j;
        window[j] = (t >= 0 && t < length) ? xr[t] : 0.0f;
    }
    for (int j = threadIdx.x; j < taps; j += blockDim.x) {
        weights[j] = w[c * taps + j];
    }
    __syncthreads();
    const int64_t t = t0 + threadIdx.x;
    if (t < length) {
        float acc = bias[c];
        for (int k = 0; k < taps; ++k) {
            acc += weights[k] * window[threadIdx.x + k];  // x[t - (taps - 1) + k]
        }
        y[row * length + t] = acc;
    }
}

torch::Tensor causal_dwconv1d(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() == 3, "x must be (batch, channels, length)");
    TORCH_CHECK(weight.dim() == 3 && weight.size(0) == x.size(1) && weight.size(1) == 1,
                "weight must be (channels, 1, taps) for a depthwise conv");
    TORCH_CHECK(bias.numel() == x.size(1), "bias needs one value per channel");
    const c10::cuda::CUDAGuard guard(x.device());
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    auto y = torch::empty_like(x);
    const int64_t rows = x.size(0) * x.size(1);
    const int64_t length = x.size(2);
    const int taps = static_cast<int>(weight.size(2));
    if (y.numel() == 0) {
        return y;
    }
    const int64_t tiles = (length + kTile - 1) / kTile;
    TORCH_CHECK(tiles <= 65535, "sequence too long for one grid column");
    const size_t shared_bytes = sizeof(float) * (kTile + 2 * taps - 1);
    TORCH_CHECK(shared_bytes <= 48 * 1024, "too many taps for the shared-memory window");
    const dim3 grid(static_cast<unsigned int>(rows), static_cast<unsigned int>(tiles));
    causal_dwconv_kernel<<<grid, kTile, shared_bytes, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
        x.size(1), length, taps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_causal_depthwise_conv1d_cuda",
    cpp_sources=_DECLARATIONS,
    cuda_sources=_KERNELS,
    functions=["causal_dwconv1d"],
    extra_cuda_cflags=["-O3"],
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
