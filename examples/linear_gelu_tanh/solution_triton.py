"""Linear + GELU(tanh) in one Triton kernel: a tiled product with the bias and activation in the epilogue.

The product runs in full float32 (input_precision="ieee"): TF32, Triton's default for float32 on the
tensor cores, keeps 10 bits of mantissa and misses float32's tolerance. W is stored (out, in) by
nn.Linear, so its tile is loaded transposed. GELU(tanh) is v * sigmoid(2u) = v / (1 + exp(-2u)).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_gelu(x_ptr, w_ptr, b_ptr, y_ptr, n, m, k,
                 BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    depth = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for start in range(0, k, BLOCK_K):
        kk = start + depth
        a = tl.load(x_ptr + rows[:, None] * k + kk[None, :], mask=(rows[:, None] < n) & (kk[None, :] < k),
                    other=0.0)
        b = tl.load(w_ptr + cols[None, :] * k + kk[:, None], mask=(cols[None, :] < m) & (kk[:, None] < k),
                    other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    v = acc + tl.load(b_ptr + cols, mask=cols < m, other=0.0)[None, :]
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
    out = v / (1.0 + tl.exp(-2.0 * u))
    tl.store(y_ptr + rows[:, None] * m + cols[None, :], out, mask=(rows[:, None] < n) & (cols[None, :] < m))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Same layer as Model, so a shared seed gives the same weight and bias.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        weight = self.linear.weight
        k = weight.shape[1]
        m = weight.shape[0]
        flat = x.contiguous().reshape(-1, k)
        n = flat.shape[0]
        y = torch.empty((n, m), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(n, 32), triton.cdiv(m, 64))
        _linear_gelu[grid](flat, weight, self.linear.bias, y, n, m, k, BLOCK_N=32, BLOCK_M=64, BLOCK_K=32)
        return y.reshape(*x.shape[:-1], m)
