"""Causal self-attention in bfloat16 through F.scaled_dot_product_attention, with a head dim of 128.

Family: attention, in bfloat16 (tensor-core GEMMs on a GPU; flash-attention territory).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
HEADS = 8
SEQ = 256
HEAD_DIM = 128

OUTPUT_SHAPES = [(BATCH, HEADS, SEQ, HEAD_DIM)]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape).to(torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return []
