"""Single-shot example (solution): the same function as one Triton kernel for an Intel GPU.

Intel's Triton backend maps a warp to a sub-group (16 or 32 lanes): num_warps=8 with 16-wide sub-groups
is a work-group of 128 work-items. grf_mode is a string ("default", "auto", "128" or "256").
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_clamp_kernel(x_ptr, bias_ptr, out_ptr, cols, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_COLS)
    for start in range(0, cols, BLOCK_COLS):
        columns = start + offsets
        mask = columns < cols
        x = tl.load(x_ptr + row * cols + columns, mask=mask)
        b = tl.load(bias_ptr + columns, mask=mask)
        y = tl.minimum(tl.maximum(x + b, -1.0), 1.0)
        tl.store(out_ptr + row * cols + columns, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        cols = self.bias.numel()
        rows = x.numel() // cols
        bias_clamp_kernel[(rows,)](x, self.bias, out, cols, BLOCK_COLS=1024, num_warps=8, grf_mode="default")
        return out
