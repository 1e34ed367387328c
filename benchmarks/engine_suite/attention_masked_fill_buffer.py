"""Causal multi-head self-attention written out the way small GPT code writes it: one packed projection split
into query, key and value, heads by view and transpose, the scores masked with `masked_fill` where a registered
lower-triangular buffer (built for a longer context) cut to the sequence length is 0, softmax, weighted values,
heads joined and projected.

Family: attention (a mask buffer sliced by a traced size, and masked_fill).
"""
import torch
import torch.nn as nn

BATCH = 4
SEQ = 127
WIDTH = 192
HEADS = 6
CONTEXT = 256

OUTPUT_SHAPES = [(BATCH, SEQ, WIDTH)]


class Model(nn.Module):
    def __init__(self, width, heads, context):
        super().__init__()
        self.heads = heads
        self.packed = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.register_buffer("lower", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.packed(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (k.size(-1) ** -0.5)
        scores = scores.masked_fill(self.lower[:, :, :t, :t] == 0, float("-inf"))
        joined = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.out(joined)


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH)]


def get_init_inputs():
    return [WIDTH, HEADS, CONTEXT]
