"""Multi-head causal self-attention with the mask kept as a registered buffer for the longest sequence and cut to
the input's length in forward (`self.causal[:, :, :t, :t]`), heads split by view and transpose."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, heads, longest):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.register_buffer("causal", torch.tril(torch.ones(longest, longest)).view(1, 1, longest, longest))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.masked_fill(self.causal[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


def get_inputs():
    return [torch.randn(2, 11, 18)]


def get_init_inputs():
    return [18, 3, 32]
