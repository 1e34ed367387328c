"""The gating product of a SwiGLU feed-forward on its own, silu(gate) * up, in bfloat16 over 16384 tokens of width
8192 (1.3e8 elements per operand): memory-bound, about 805 MB moved per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 16384
HIDDEN = 8192


class Model(nn.Module):
    def forward(self, gate, up):
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16), torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
