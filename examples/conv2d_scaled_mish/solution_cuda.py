"""Conv2d 3x3 + per-channel-scaled Mish in one CUDA kernel: a direct convolution with the epilogue fused.

A block of 8 x 32 threads computes an 8 x 32 patch of one image for 8 output channels, one pixel and 8
sums per thread. Input channels go in chunks of 8: the block stages the patch with its one-pixel halo
(zeros outside the image: the padding) and the chunk's weights in shared memory, then each thread adds
its 9 taps x 8 channels x 8 outputs. A warp is one patch row, so global loads are coalesced along the
width and shared reads hit consecutive words; the weights are read by all threads at once (broadcast).
The epilogue mirrors PyTorch: softplus(t) = log1p(exp(t)), or t above 20.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_DECLARATIONS = ("torch::Tensor conv_scaled_mish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
                 "torch::Tensor scale);")

_KERNELS = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

constexpr int kRows = 8;      // patch height (thread rows)
constexpr int kCols = 32;     // patch width (one warp)
constexpr int kOut = 8;       // output channels per block, accumulators per thread
constexpr int kChunk = 8;     // input channels staged per round
constexpr int kHaloRows = kRows + 2;
constexpr int kHaloCols = kCols + 2;

// grid (patches of the plane, output-channel blocks, batch).
__global__ void __launch_bounds__(kRows * kCols) conv_mish_kernel(const float* __restrict__ x,
                                                                  const float* __restrict__ w,
                                                                  const float* __restrict__ bias,
                                                                  const float* __restrict__ scale,
                                                                  float* __restrict__ y, int cin, int cout,
                                                                  int height, int width) {
    __shared__ float patch[kChunk][kHaloRows][kHaloCols];
    __shared__ float weights[kChunk][9][kOut];
    const int tx = threadIdx.x % kCols;
    const int ty = threadIdx.x / kCols;
    const int patches_across = (width + kCols - 1) / kCols;
    const int h0 = (blockIdx.x / patches_across) * kRows;
    const int w0 = (blockIdx.x % patches_across) * kCols;
    const int o0 = blockIdx.y * kOut;
    const int64_t plane = static_cast<int64_t>(height) * width;
    const float* image = x + static_cast<int64_t>(blockIdx.z) * cin * plane;
    float acc[kOut];
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
        acc[o] = 0.0f;
    }
    for (int c0 = 0; c0 < cin; c0 += kChunk) {
        for (int e = threadIdx.x; e < kChunk * kHaloRows * kHaloCols; e += kRows * kCols) {
            const int c = e / (kHaloRows * kHaloCols);
            const int r = (e / kHaloCols) % kHaloRows;
            const int s = e % kHaloCols;
            const int hh = h0 + r - 1;
            const int ww = w0 + s - 1;
            const bool inside = c0 + c < cin && hh >= 0 && hh < height && ww >= 0 && ww < width;
            patch[c][r][s] = inside ? image[(c0 + c) * plane + static_cast<int64_t>(hh) * width + ww] : 0.0f;
        }
        for (int e = threadIdx.x; e < kOut * kChunk * 9; e += kRows * kCols) {
            const int o = e / (kChunk * 9);
            const int c = (e / 9) % kChunk;
            const int tap = e % 9;
            const bool inside = o0 + o < cout && c0 + c < cin;
            weights[c][tap][o] = inside ? w[(static_cast<int64_t>(o0 + o) * cin + c0 + c) * 9 + tap] : 0.0f;
        }
        __syncthreads();
        for (int c = 0; c < kChunk; ++c) {
#pragma unroll
            for (int tap = 0; tap < 9; ++tap) {
                const float v = patch[c][ty + tap / 3][tx + tap % 3];
#pragma unroll
                for (int o = 0; o < kOut; ++o) {
                    acc[o] = fmaf(weights[c][tap][o], v, acc[o]);
                }
            }
        }
        __syncthreads();
    }
    const int h = h0 + ty;
    const int col = w0 + tx;
    if (h >= height || col >= width) {
        return;
    }
    float* out = y + static_cast<int64_t>(blockIdx.z) * cout * plane + static_cast<int64_t>(h) * width + col;
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
        if (o0 + o < cout) {
            const float v = acc[o] + bias[o0 + o];
            const float t = v * scale[o0 + o];
            out[(o0 + o) * plane] = v * tanhf(t > 20.0f ? t : log1pf(expf(t)));
        }
    }
}

torch::Tensor conv_scaled_mish(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() == 4, "x must be (batch, channels, height, width)");
    TORCH_CHECK(weight.dim() == 4 && weight.size(1) == x.size(1) && weight.size(2) == 3 && weight.size(3) == 3,
                "weight must be (out_channels, in_channels, 3, 3)");
    TORCH_CHECK(bias.numel() == weight.size(0) && scale.numel() == weight.size(0),
                "bias and scale need one value per output channel");
    const c10::cuda::CUDAGuard guard(x.device());
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    scale = scale.contiguous();
    const int64_t batch = x.size(0);
    const int64_t cin = x.size(1);
    const int64_t cout = weight.size(0);
    const int64_t height = x.size(2);
    const int64_t width = x.size(3);
    auto y = torch::empty({batch, cout, height, width}, x.options());
    if (y.numel() == 0) {
        return y;
    }
    const int64_t patches = ((height + kRows - 1) / kRows) * ((width + kCols - 1) / kCols);
    const int64_t channel_blocks = (cout + kOut - 1) / kOut;
    TORCH_CHECK(patches < (1LL << 31) && channel_blocks <= 65535 && batch <= 65535,
                "too many patches, channel blocks or images for one grid");
    TORCH_CHECK(cin < (1LL << 31) && cout < (1LL << 31) && height < (1LL << 31) && width < (1LL << 31),
                "sizes must fit in 32 bits");
    const dim3 grid(static_cast<unsigned int>(patches), static_cast<unsigned int>(channel_blocks),
                    static_cast<unsigned int>(batch));
    conv_mish_kernel<<<grid, kRows * kCols, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), scale.data_ptr<float>(),
        y.data_ptr<float>(), static_cast<int>(cin), static_cast<int>(cout), static_cast<int>(height),
        static_cast<int>(width));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_conv2d_scaled_mish_cuda",
    cpp_sources=_DECLARATIONS,
    cuda_sources=_KERNELS,
    functions=["conv_scaled_mish"],
    extra_cuda_cflags=["-O3"],
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
