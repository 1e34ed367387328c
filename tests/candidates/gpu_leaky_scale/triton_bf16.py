"""Trick candidate for gpu_leaky_scale: a Triton kernel that multiplies in bfloat16 to go faster.

Eight significant bits give errors near 0.2%, beyond float32's tolerance: the harness must call this
incorrect.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_scale_bf16(x_ptr, scale_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside).to(tl.bfloat16)
    s = tl.load(scale_ptr + offsets % cols, mask=inside).to(tl.bfloat16)
    y = (x * s).to(tl.float32)
    tl.store(out_ptr + offsets, tl.where(y > 0, y, 0.1 * y), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _leaky_scale_bf16[(triton.cdiv(n, 1024),)](x, self.scale, out, n, self.scale.numel(), BLOCK=1024)
        return out
