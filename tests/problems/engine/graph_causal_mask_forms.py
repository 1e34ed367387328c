"""Causal masks in the other forms people build them from the sequence length: a boolean `triu(..., diagonal=1)`
of the dropped keys for `masked_fill`, additive masks of zeros and -inf (from `zeros` and from `full`, viewed
with the batch dims), and `torch.where` on a lower triangle that also hides the diagonal."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k, v):
        t = q.size(-2)
        scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        dropped = torch.triu(torch.ones(t, t, dtype=torch.bool, device=q.device), diagonal=1)
        first = torch.softmax(scores.masked_fill(dropped, float("-inf")), dim=-1) @ v
        additive = torch.zeros(t, t, device=q.device).masked_fill(dropped, float("-inf"))
        second = torch.softmax(scores + additive, dim=-1) @ v
        lower = torch.full((t, t), float("-inf"), device=q.device).triu(1).view(1, 1, t, t)
        third = torch.softmax(lower + scores, dim=-1) @ v
        strict = torch.tril(torch.ones(t, t, device=q.device), diagonal=-1).bool()
        gated = torch.where(strict, scores, -1e4)
        return first + second - third, torch.softmax(gated, dim=-1)


def get_inputs():
    return [torch.randn(2, 3, 9, 10), torch.randn(2, 3, 9, 10), torch.randn(2, 3, 9, 6)]


def get_init_inputs():
    return []
