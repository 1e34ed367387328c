"""Bidirectional attention over long fp32 sequences through F.scaled_dot_product_attention: batch 2, 8 heads, 4096
tokens, head dim 128, no mask. About 137 GFLOP per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
HEADS = 8
SEQ = 4096
HEAD_DIM = 128


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape) for _ in range(3)]


def get_init_inputs():
    return []
