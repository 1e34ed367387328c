"""A linear layer whose epilogue broadcasts the product to more elements: relu(fc(x) + y), y of (3, M, N)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features_in: int, features_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features_in, features_out)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x) + y)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(40, 24), torch.randn(3, 40, 20)]


def get_init_inputs() -> list[int]:
    return [24, 20]
