"""nn.MultiheadAttention (batch first) as a causal self-attention, the boolean mask of future positions built in
forward from the sequence length (`torch.triu(torch.ones(t, t), diagonal=1)`), then a residual connection.

Family: attention (the layer lowered as projections around one fused causal attention).
"""
import torch
import torch.nn as nn

BATCH = 4
SEQ = 129
WIDTH = 160
HEADS = 5

OUTPUT_SHAPES = [(BATCH, SEQ, WIDTH)]


class Model(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x):
        t = x.size(1)
        future = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        attended, _ = self.attention(x, x, x, attn_mask=future, need_weights=False)
        return x + attended


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH)]


def get_init_inputs():
    return [WIDTH, HEADS]
