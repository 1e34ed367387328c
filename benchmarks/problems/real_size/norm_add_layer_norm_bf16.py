"""The residual stream of a pre-norm transformer in bfloat16: returns the updated stream x + branch and its layer norm,
16384 tokens of width 4096 (6.7e7 elements). Two inputs and two outputs, about 537 MB moved per call.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 16384
WIDTH = 4096


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(width, dtype=torch.bfloat16) + 0.5)
        self.bias = nn.Parameter(torch.randn(width, dtype=torch.bfloat16) * 0.1)

    def forward(self, stream, branch):
        stream = stream + branch
        return stream, F.layer_norm(stream, (stream.shape[-1],), self.weight, self.bias, 1e-5)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16), torch.randn(TOKENS, WIDTH, dtype=torch.bfloat16)]


def get_init_inputs():
    return [WIDTH]
