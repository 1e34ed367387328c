"""einsum in its common forms (a batched input times a weight, attention scores with the key transposed, a
transpose, a sum over a letter, an outer product), expand as a broadcast (and laid out in full where a reduction
reads it), selu as a layer and a function, and torch.multiply."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(13, 7) * 0.3)
        self.scale = nn.Parameter(torch.rand(7) + 0.5)
        self.act = nn.SELU()

    def forward(self, x, q, k):
        h = self.act(torch.einsum("bij,jk->bik", x, self.proj))
        gated = torch.multiply(h, self.scale.view(1, 1, 7).expand_as(h))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * 0.25
        flipped = torch.einsum("bij->bji", torch.selu(gated))
        totals = torch.einsum("bhqd->bhd", q)
        outer = torch.einsum("i,j->ij", self.scale, self.proj[0])
        laid_out = self.scale.unsqueeze(0).expand(4, 7).sum(0)
        return flipped, scores, totals, outer, laid_out


def get_inputs():
    return [torch.randn(3, 5, 13), torch.randn(3, 2, 9, 6), torch.randn(3, 2, 11, 6)]


def get_input_variants():
    return [[torch.randn(2, 5, 13), torch.randn(2, 2, 9, 6), torch.randn(2, 2, 11, 6)]]


def get_init_inputs():
    return []
