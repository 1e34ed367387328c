"""A pre-norm transformer encoder layer written with plain modules in bfloat16: layer norms, a fused QKV projection,
F.scaled_dot_product_attention over 16 heads, an output projection and a GELU MLP, at batch 8 x 1024 tokens of width
1024. About 240 GFLOP per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 1024
WIDTH = 1024
HEADS = 16
MLP = 4096


class Model(nn.Module):
    def __init__(self, width, heads, mlp):
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.attn_out = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp_in = nn.Linear(width, mlp)
        self.mlp_out = nn.Linear(mlp, width)
        self.to(torch.bfloat16)

    def forward(self, x):
        batch, seq, width = x.shape
        head_dim = width // self.heads
        qkv = self.qkv(self.attn_norm(x)).view(batch, seq, 3, self.heads, head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        mixed = F.scaled_dot_product_attention(q, k, v)
        x = x + self.attn_out(mixed.transpose(1, 2).reshape(batch, seq, width))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.mlp_norm(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, HEADS, MLP]
