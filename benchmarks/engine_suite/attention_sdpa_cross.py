"""Non-causal cross-attention through F.scaled_dot_product_attention: 96 queries attend to 320 keys.

Family: attention (the fused operator without a mask, query and key lengths different).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 4
QUERIES = 96
KEYS = 320
HEAD_DIM = 32

OUTPUT_SHAPES = [(BATCH, HEADS, QUERIES, HEAD_DIM)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [
        torch.randn(BATCH, HEADS, QUERIES, HEAD_DIM),
        torch.randn(BATCH, HEADS, KEYS, HEAD_DIM),
        torch.randn(BATCH, HEADS, KEYS, HEAD_DIM),
    ]


def get_init_inputs():
    return []
