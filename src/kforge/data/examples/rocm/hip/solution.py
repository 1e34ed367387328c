"""Single-shot example (solution): the same function as one HIP kernel on an AMD GPU, one thread per element.

torch built for ROCm compiles `cuda_sources` with hipcc (after hipify, which leaves HIP code as it is). Its
tensors keep the cuda device type, and the kernel goes on PyTorch's current stream, which ROCm's torch
names `getCurrentHIPStreamMasqueradingAsCUDA`.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

HIP_SOURCE = r"""
#include <torch/extension.h>
#include <hip/hip_runtime.h>
#include <ATen/hip/impl/HIPStreamMasqueradingAsCUDA.h>

__global__ void bias_clamp_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                  float* __restrict__ out, int64_t total, int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < total) {
        out[i] = fminf(1.0f, fmaxf(-1.0f, x[i] + bias[i % cols]));
    }
}

torch::Tensor bias_clamp(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 tensor on the GPU");
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t total = input.numel();
    const int threads = 256;  // four 64-lane wavefronts on CDNA
    const int64_t blocks = (total + threads - 1) / threads;
    hipStream_t stream = at::hip::getCurrentHIPStreamMasqueradingAsCUDA();
    bias_clamp_kernel<<<blocks, threads, 0, stream>>>(
        input.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), total, bias.numel());
    TORCH_CHECK(hipGetLastError() == hipSuccess, "bias_clamp_kernel failed to launch");
    return out;
}
"""

CPP_SOURCE = "torch::Tensor bias_clamp(torch::Tensor x, torch::Tensor bias);"

bias_clamp_ext = load_inline(
    name="kforge_example_bias_clamp_hip",
    cpp_sources=CPP_SOURCE,
    cuda_sources=HIP_SOURCE,
    functions=["bias_clamp"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return bias_clamp_ext.bias_clamp(x, self.bias)
