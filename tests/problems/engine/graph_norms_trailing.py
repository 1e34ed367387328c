"""Layer norm over the last two dims (a layer with weight and bias) and the last three (by function, no weights),
and vector norms over given dims: torch.norm (2 and 1), Tensor.norm (inf, keepdim), linalg.vector_norm (3)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((6, 11), eps=1e-4)

    def forward(self, x):
        y = self.norm(x)
        z = F.layer_norm(x * 2.0, x.shape[1:])
        return (y, z, torch.norm(y, dim=(1, 3)), torch.norm(x, p=1, dim=-1), x.norm(float("inf"), 2, True),
                torch.linalg.vector_norm(z, ord=3, dim=(1, 2)))


def get_inputs():
    return [torch.randn(3, 5, 6, 11)]


def get_input_variants():
    return [[torch.randn(4, 5, 6, 11)]]


def get_init_inputs():
    return []
