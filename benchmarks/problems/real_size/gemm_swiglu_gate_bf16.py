"""The gated half of a SwiGLU feed-forward in bfloat16: silu(x W_gate^T) * (x W_up^T) for 4096 tokens, 4096 -> 11008.
Two GEMMs that read the same activations, about 740 GFLOP per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
MODEL_DIM = 4096
HIDDEN = 11008


class Model(nn.Module):
    def __init__(self, model_dim, hidden):
        super().__init__()
        self.gate = nn.Linear(model_dim, hidden, bias=False)
        self.up = nn.Linear(model_dim, hidden, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        return F.silu(self.gate(x)) * self.up(x)


def get_inputs():
    return [torch.randn(TOKENS, MODEL_DIM, dtype=torch.bfloat16)]


def get_init_inputs():
    return [MODEL_DIM, HIDDEN]
