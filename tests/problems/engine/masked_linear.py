"""A linear layer whose epilogue is driven by comparisons: a where, a mask cast to float, a mask multiplied."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in: int, features_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features_in, features_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        boost = (y > 0.25).float()
        damped = torch.where(y < -0.5, y * 0.1, y)
        return damped * (1.0 + boost) + (y >= 1.0).to(y.dtype) - (y == 0.0) * 3.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(24, 20)]


def get_input_variants() -> list[list[torch.Tensor]]:
    return [[torch.randn(7, 20)]]


def get_init_inputs() -> list[int]:
    return [20, 36]
