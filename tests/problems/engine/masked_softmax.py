"""Softmax over the positions a second input keeps (keep > 0.5); every row keeps at least its diagonal one."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return torch.softmax(scores.where(keep > 0.5, float("-inf")), dim=-1)


def _inputs(rows: int, cols: int) -> list[torch.Tensor]:
    diagonal = F.one_hot(torch.arange(rows) % cols, cols).float()
    return [torch.randn(rows, cols), torch.rand(rows, cols) + diagonal]


def get_inputs() -> list[torch.Tensor]:
    return _inputs(12, 48)


def get_input_variants() -> list[list[torch.Tensor]]:
    return [_inputs(5, 33)]


def get_init_inputs() -> list:
    return []
