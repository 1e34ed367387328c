"""A pre-norm transformer block: x + attn(ln1(x)), then + mlp(ln2(.)), multi-head attention through reshapes.

Family: whole small networks (layer norms, four GEMMs, attention with a softmax, a GELU MLP and two residuals).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 128
DIM = 256
HEADS = 4
HIDDEN = 1024

OUTPUT_SHAPES = [(BATCH, SEQ, DIM)]


class Model(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * self.head_dim**-0.5
        attended = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(attended)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, HIDDEN]
