"""A language model's output head in bfloat16 with soft-capped logits: cap * tanh(h W^T / cap), 2048 tokens of width
2048 onto a 32000-word vocabulary. About 270 GFLOP per call.
"""
import torch
import torch.nn as nn

TOKENS = 2048
WIDTH = 2048
VOCAB = 32000
CAP = 30.0


class Model(nn.Module):
    def __init__(self, width, vocab, cap):
        super().__init__()
        self.unembed = nn.Linear(width, vocab, bias=False)
        self.cap = cap
        self.to(torch.bfloat16)

    def forward(self, hidden):
        return self.cap * torch.tanh(self.unembed(hidden) / self.cap)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH, VOCAB, CAP]
