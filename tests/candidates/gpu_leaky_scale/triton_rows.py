"""Honest Triton candidate for gpu_leaky_scale: 2-D tiles, so each column's scale is loaded once per tile.

Rows are addressed with 64-bit offsets: a tensor of more than 2**31 elements would overflow 32-bit ones.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_scale_tile(x_ptr, scale_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    s = tl.load(scale_ptr + c, mask=c < cols, other=0.0)
    inside = (r[:, None] < rows) & (c[None, :] < cols)
    offsets = r[:, None].to(tl.int64) * cols + c[None, :]
    y = tl.load(x_ptr + offsets, mask=inside) * s[None, :]
    tl.store(out_ptr + offsets, tl.where(y > 0, y, 0.1 * y), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        cols = self.scale.numel()
        rows = x.numel() // cols
        block_r, block_c = 4, 512
        grid = (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))
        _leaky_scale_tile[grid](x, self.scale, out, rows, cols, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=4)
        return out
