"""One-head causal self-attention written out as people write it: the mask built in forward from the sequence
length (`torch.tril(torch.ones(t, t))`), applied with `masked_fill`, then a row softmax and the weighted values."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)

    def forward(self, x):
        t = x.shape[1]
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1) / x.size(-1) ** 0.5
        mask = torch.tril(torch.ones(t, t, device=x.device))
        scores = scores.masked_fill(mask == 0, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def get_inputs():
    return [torch.randn(3, 13, 20)]


def get_init_inputs():
    return [20]
