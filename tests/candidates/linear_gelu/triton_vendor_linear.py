"""linear_gelu with the vendor's GEMM (F.linear) and its own Triton epilogue: tanh GELU, then the scale.

Correct only under a policy that allows the vendor GEMM (kforge eval --allow-vendor-gemm); the epilogue is
the candidate's own work either way.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _gelu_tanh_half(y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    y = tl.load(y_ptr + offsets, mask=inside)
    inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
    tanh = 2.0 * tl.sigmoid(2.0 * inner) - 1.0
    tl.store(out_ptr + offsets, 0.25 * y * (1.0 + tanh), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, features_in, features_out):
        super().__init__()
        self.linear = nn.Linear(features_in, features_out)

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        block = 256
        _gelu_tanh_half[(triton.cdiv(n, block),)](y, out, n, BLOCK=block)
        return out
