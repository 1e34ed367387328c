"""Grouped-query causal attention in bfloat16: 32 query heads share 8 key/value heads (each repeated 4 times with
repeat_interleave), batch 2, 2048 tokens, head dim 128, through F.scaled_dot_product_attention. About 69 GFLOP per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
QUERY_HEADS = 32
KV_HEADS = 8
SEQ = 2048
HEAD_DIM = 128


class Model(nn.Module):
    def __init__(self, query_heads, kv_heads):
        super().__init__()
        self.group = query_heads // kv_heads

    def forward(self, q, k, v):
        k = k.repeat_interleave(self.group, dim=1)
        v = v.repeat_interleave(self.group, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(BATCH, QUERY_HEADS, SEQ, HEAD_DIM, dtype=torch.bfloat16),
            torch.randn(BATCH, KV_HEADS, SEQ, HEAD_DIM, dtype=torch.bfloat16),
            torch.randn(BATCH, KV_HEADS, SEQ, HEAD_DIM, dtype=torch.bfloat16)]


def get_init_inputs():
    return [QUERY_HEADS, KV_HEADS]
