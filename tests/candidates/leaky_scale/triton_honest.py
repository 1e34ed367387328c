"""Honest Triton candidate for leaky_scale: one program per block of the flattened tensor.

Runs on a GPU, and on the CPU through Triton's interpreter (the cpu platform sets TRITON_INTERPRET=1).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_scale(x_ptr, scale_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    x = tl.load(x_ptr + offsets, mask=inside)
    s = tl.load(scale_ptr + offsets % cols, mask=inside)
    y = x * s
    tl.store(out_ptr + offsets, tl.where(y > 0, y, 0.1 * y), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 1024
        _leaky_scale[(triton.cdiv(n, block),)](x, self.scale, out, n, self.scale.numel(), BLOCK=block)
        return out
