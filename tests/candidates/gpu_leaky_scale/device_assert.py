"""Faulty candidate for gpu_leaky_scale: a device-side assert fails in every thread.

Like an illegal address, a failed device assert leaves the CUDA context unusable for the rest of the
process. Shares unsynchronized_launch.py's extension.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECLARATIONS = r"""
torch::Tensor leaky_scale_bf16(torch::Tensor x, torch::Tensor scale);
torch::Tensor leaky_scale_detached(torch::Tensor x, torch::Tensor scale);
torch::Tensor leaky_scale_wild_write(torch::Tensor x, torch::Tensor scale);
torch::Tensor leaky_scale_assert(torch::Tensor x, torch::Tensor scale);
"""

KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cstdint>
#undef NDEBUG
#include <cassert>

__device__ __forceinline__ float leaky(float v) { return v > 0.0f ? v : 0.1f * v; }

// Rounds each product to bfloat16 (8 significant bits): errors near 0.2%, past float32's tolerance.
__global__ void bf16_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                            float* __restrict__ out, int64_t n, int64_t cols) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = leaky(__bfloat162float(__float2bfloat16(x[i] * scale[i % cols])));
    }
}

// Block 0 spins for `delay` clock cycles before writing, so the call returns long before it finishes.
__global__ void late_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                            float* __restrict__ out, int64_t n, int64_t cols, long long delay) {
    if (blockIdx.x == 0) {
        const long long start = clock64();
        while (clock64() - start < delay) {
        }
    }
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = leaky(x[i] * scale[i % cols]);
    }
}

// Writes through a pointer into the unmapped first page: an illegal address, which ends the context.
__global__ void wild_kernel(float* target, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        target[i] = 1.0f;
    }
}

// Asserts something false for every finite input: a device-side assert, which ends the context.
__global__ void assert_kernel(const float* __restrict__ x, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        assert(x[i] > 1.0e30f);
    }
}

static unsigned int blocks_for(int64_t n) { return static_cast<unsigned int>((n + 255) / 256); }

torch::Tensor leaky_scale_bf16(torch::Tensor x, torch::Tensor scale) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    bf16_kernel<<<blocks_for(xc.numel()), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), scale.data_ptr<float>(), out.data_ptr<float>(), xc.numel(), scale.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

torch::Tensor leaky_scale_detached(torch::Tensor x, torch::Tensor scale) {
    const c10::cuda::CUDAGuard guard(x.device());
    static cudaStream_t hidden = nullptr;
    if (hidden == nullptr) {
        C10_CUDA_CHECK(cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking));
    }
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    late_kernel<<<blocks_for(xc.numel()), 256, 0, hidden>>>(
        xc.data_ptr<float>(), scale.data_ptr<float>(), out.data_ptr<float>(), xc.numel(), scale.numel(),
        4000000LL);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

torch::Tensor leaky_scale_wild_write(torch::Tensor x, torch::Tensor scale) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = torch::empty_like(x);
    wild_kernel<<<blocks_for(x.numel()), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<float*>(uintptr_t{256}), x.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

torch::Tensor leaky_scale_assert(torch::Tensor x, torch::Tensor scale) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    assert_kernel<<<blocks_for(xc.numel()), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), xc.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return torch::empty_like(xc);
}
"""

ext = load_inline(name="kforge_test_gpu_leaky_faulty", cpp_sources=DECLARATIONS, cuda_sources=KERNELS,
                  functions=["leaky_scale_bf16", "leaky_scale_detached", "leaky_scale_wild_write",
                             "leaky_scale_assert"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return ext.leaky_scale_assert(x, self.scale)
