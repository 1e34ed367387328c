"""Linear + per-feature scale/shift + SiLU + clamp + skip in one Triton kernel, the epilogue on the tile.

The product runs in full float32 (input_precision="ieee"): TF32, Triton's default for float32 on the
tensor cores, keeps 10 bits of mantissa and misses float32's tolerance. W is stored (out, in) by
nn.Linear, so its tile is loaded transposed. The six pointwise ops are applied to the accumulator tile
before its one store; silu(z) is z / (1 + exp(-z)).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_film(x_ptr, w_ptr, b_ptr, gamma_ptr, beta_ptr, y_ptr, n, m, k,
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
    col_ok = cols < m
    h = acc + tl.load(b_ptr + cols, mask=col_ok, other=0.0)[None, :]
    z = h * tl.load(gamma_ptr + cols, mask=col_ok, other=0.0)[None, :] + tl.load(beta_ptr + cols, mask=col_ok,
                                                                                other=0.0)[None, :]
    s = z / (1.0 + tl.exp(-z))
    out = tl.minimum(tl.maximum(s, -0.25), 4.0) + 0.25 * h
    tl.store(y_ptr + rows[:, None] * m + cols[None, :], out, mask=(rows[:, None] < n) & col_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Created in the order of Model, so a shared seed gives the same parameters.
        self.linear = nn.Linear(in_features, out_features)
        self.gamma = nn.Parameter(torch.rand(out_features) * 4.0 + 1.0)
        self.beta = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x):
        weight = self.linear.weight
        k = weight.shape[1]
        m = weight.shape[0]
        flat = x.contiguous().reshape(-1, k)
        n = flat.shape[0]
        y = torch.empty((n, m), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(n, 32), triton.cdiv(m, 64))
        _linear_film[grid](flat, weight, self.linear.bias, self.gamma, self.beta, y, n, m, k,
                           BLOCK_N=32, BLOCK_M=64, BLOCK_K=32)
        return y.reshape(*x.shape[:-1], m)
