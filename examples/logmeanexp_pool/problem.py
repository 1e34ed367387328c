"""LogMeanExp pooling over the sequence axis.

y[b, d] = (1 / beta) * log(mean_n exp(beta * x[b, n, d]))

A smooth pooling that moves from mean pooling (beta -> 0) to max pooling
(beta -> inf). Input is (batch, seq, features); output is (batch, features).
"""
import math

import torch
import torch.nn as nn

BATCH = 16
SEQ = 128
FEATURES = 256
BETA = 2.0


class Model(nn.Module):
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        n = x.shape[1]
        return (torch.logsumexp(self.beta * x, dim=1) - math.log(n)) / self.beta


def get_inputs():
    return [torch.randn(BATCH, SEQ, FEATURES)]


def get_input_variants():
    return [
        [torch.randn(3, 1000, 77)],
        [torch.randn(1, 5, 4099)],
    ]


def get_init_inputs():
    return [BETA]
