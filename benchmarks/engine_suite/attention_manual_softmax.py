"""Attention written out by hand: softmax(q @ k.transpose(-2, -1) * scale) @ v, over (batch, heads, seq, dim).

Family: attention (two batched GEMMs with a row softmax between them, unfused in eager PyTorch).
"""
import torch
import torch.nn as nn

BATCH = 8
HEADS = 4
SEQ = 128
HEAD_DIM = 64

OUTPUT_SHAPES = [(BATCH, HEADS, SEQ, HEAD_DIM)]


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim**-0.5

    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1) * self.scale
        return torch.softmax(scores, dim=-1) @ v


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return [HEAD_DIM]
