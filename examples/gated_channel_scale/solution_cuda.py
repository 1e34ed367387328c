"""Fused per-channel gate in CUDA: one read of x, one write of y, 16-byte accesses.

Each thread handles four consecutive elements with one float4 load and store. When the row length is a
multiple of four (here 1024) the four share a channel, so the channel index is computed once; other
shapes fall back to one element per thread. x * sigmoid(x * s) is computed as x / (1 + exp(-x * s)).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_DECLARATIONS = "torch::Tensor gated_channel_scale(torch::Tensor x, torch::Tensor scale, torch::Tensor shift);"

_KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float gate(float v, float s, float b) { return v / (1.0f + expf(-v * s)) + b; }

// Four elements per thread; requires length % 4 == 0 so that they share one channel.
__global__ void gate_vec4_kernel(const float4* __restrict__ x, const float* __restrict__ scale,
                                 const float* __restrict__ shift, float4* __restrict__ y, int64_t quads,
                                 int64_t channels, int64_t length) {
    const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (q >= quads) {
        return;
    }
    const int64_t c = (4 * q / length) % channels;
    const float s = scale[c];
    const float b = shift[c];
    float4 v = x[q];
    v.x = gate(v.x, s, b);
    v.y = gate(v.y, s, b);
    v.z = gate(v.z, s, b);
    v.w = gate(v.w, s, b);
    y[q] = v;
}

__global__ void gate_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                            const float* __restrict__ shift, float* __restrict__ y, int64_t n,
                            int64_t channels, int64_t length) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const int64_t c = (i / length) % channels;
        y[i] = gate(x[i], scale[c], shift[c]);
    }
}

torch::Tensor gated_channel_scale(torch::Tensor x, torch::Tensor scale, torch::Tensor shift) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() == 3, "x must be (batch, channels, length)");
    TORCH_CHECK(scale.numel() == x.size(1) && shift.numel() == x.size(1),
                "scale and shift need one value per channel");
    const c10::cuda::CUDAGuard guard(x.device());
    x = x.contiguous();
    scale = scale.contiguous();
    shift = shift.contiguous();
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (n == 0) {
        return y;
    }
    const int64_t channels = x.size(1);
    const int64_t length = x.size(2);
    const int threads = 256;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    const bool aligned = reinterpret_cast<uintptr_t>(x.data_ptr<float>()) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
    if (length % 4 == 0 && aligned) {
        const int64_t quads = n / 4;
        gate_vec4_kernel<<<static_cast<unsigned int>((quads + threads - 1) / threads), threads, 0, stream>>>(
            reinterpret_cast<const float4*>(x.data_ptr<float>()), scale.data_ptr<float>(),
            shift.data_ptr<float>(), reinterpret_cast<float4*>(y.data_ptr<float>()), quads, channels, length);
    } else {
        gate_kernel<<<static_cast<unsigned int>((n + threads - 1) / threads), threads, 0, stream>>>(
            x.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(), y.data_ptr<float>(), n,
            channels, length);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_gated_channel_scale_cuda",
    cpp_sources=_DECLARATIONS,
    cuda_sources=_KERNELS,
    functions=["gated_channel_scale"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        # Same creation order as Model, so a shared seed gives equal parameters.
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)
        self.shift = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x):
        return _ext.gated_channel_scale(x, self.scale, self.shift)
