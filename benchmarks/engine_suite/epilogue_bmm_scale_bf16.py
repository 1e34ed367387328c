"""A bfloat16 batched matmul (4-D, through torch.matmul) scaled by 1/sqrt(K) and passed through a sigmoid.

Family: single heavy op with epilogue, in bfloat16 (a tensor-core batched GEMM on a GPU).
"""
import torch
import torch.nn as nn

GROUPS = 4
BATCH = 16
M = 128
K = 64
N = 128

OUTPUT_SHAPES = [(GROUPS, BATCH, M, N)]


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.scale = k**-0.5

    def forward(self, a, b):
        return torch.sigmoid(torch.matmul(a, b) * self.scale)


def get_inputs():
    return [torch.randn(GROUPS, BATCH, M, K).to(torch.bfloat16), torch.randn(GROUPS, BATCH, K, N).to(torch.bfloat16)]


def get_init_inputs():
    return [K]
