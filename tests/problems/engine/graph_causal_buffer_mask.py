"""Multi-head causal self-attention with a boolean mask of allowed keys kept as a buffer for the longest sequence
and cut to the input's length in forward (`~self.allowed[:t, :t]` given to `masked_fill`), heads made by chunk,
reshape and permute."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, heads, longest):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.register_buffer("allowed", torch.ones(longest, longest, dtype=torch.bool).tril())

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        k = k.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        v = v.reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        att = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
        att = att.masked_fill(~self.allowed[:t, :t], float("-inf"))
        return torch.tanh(torch.softmax(att, dim=-1) @ v)


def get_inputs():
    return [torch.randn(2, 11, 18)]


def get_init_inputs():
    return [18, 3, 32]
