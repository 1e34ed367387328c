"""Faulty Triton candidate for gpu_leaky_scale: stores far outside the output (CUDA illegal address).

The error leaves the worker's CUDA context unusable: the verdict must be `crashed` with the CUDA error,
and the next evaluation must run normally.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_scale_wild(x_ptr, scale_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    y = tl.load(x_ptr + offsets, mask=inside) * tl.load(scale_ptr + offsets % cols, mask=inside)
    far = offsets.to(tl.int64) + (1 << 40)
    tl.store(out_ptr + far, tl.where(y > 0, y, 0.1 * y), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _leaky_scale_wild[(triton.cdiv(n, 1024),)](x, self.scale, out, n, self.scale.numel(), BLOCK=1024)
        return out
