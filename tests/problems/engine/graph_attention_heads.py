"""Multi-head self-attention written out: one projection cut into heads by reshape and permute, scores, softmax,
weighted values, heads joined back and projected."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        joined = (scores @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(joined)


def get_inputs():
    return [torch.randn(2, 5, 16)]


def get_init_inputs():
    return [16, 4]
