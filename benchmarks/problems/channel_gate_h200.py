"""A residual branch gated per channel, at a size an H200 takes hundreds of microseconds over (memory-bound).

y[b, c, t] = skip[b, c, t] + alpha[c] * x[b, c, t] * sigmoid(beta[c] * x[b, c, t] + gamma[c])

A benchmark problem, not an example: two float32 inputs of 192 MB and an output of 192 MB (576 MB moved per
call, a few FLOPs per element), so a fused kernel is judged by the share of the copy bandwidth it reaches.
The three per-channel parameters are broadcast along the batch and time axes.
"""
import torch
import torch.nn as nn

BATCH = 24
CHANNELS = 128
LENGTH = 16384


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.alpha = nn.Parameter(torch.rand(channels) * 0.5 + 0.75)
        self.beta = nn.Parameter(torch.rand(channels) + 0.5)
        self.gamma = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x, skip):
        alpha = self.alpha.view(1, -1, 1)
        beta = self.beta.view(1, -1, 1)
        gamma = self.gamma.view(1, -1, 1)
        return skip + alpha * x * torch.sigmoid(beta * x + gamma)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH), torch.randn(BATCH, CHANNELS, LENGTH)]


def get_input_variants():
    # Small, so correctness stays cheap: an odd length, and a single time step.
    return [
        [torch.randn(3, CHANNELS, 1001), torch.randn(3, CHANNELS, 1001)],
        [torch.randn(2, CHANNELS, 1), torch.randn(2, CHANNELS, 1)],
    ]


def get_init_inputs():
    return [CHANNELS]
