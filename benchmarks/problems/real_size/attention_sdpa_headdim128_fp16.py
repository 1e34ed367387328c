"""Encoder attention in float16 with wide heads through F.scaled_dot_product_attention and an explicit scale: batch
16, 16 heads, 1024 tokens, head dim 128, no mask. About 137 GFLOP per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
HEADS = 16
SEQ = 1024
HEAD_DIM = 128


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, scale=self.scale)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape, dtype=torch.float16) for _ in range(3)]


def get_init_inputs():
    return [HEAD_DIM]
