"""Causal self-attention through F.scaled_dot_product_attention(q, k, v, is_causal=True).

Family: attention (the fused operator with a causal mask; half of the score matrix is skipped).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
HEADS = 8
SEQ = 256
HEAD_DIM = 64

OUTPUT_SHAPES = [(BATCH, HEADS, SEQ, HEAD_DIM)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
