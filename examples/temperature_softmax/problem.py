"""Softmax with a temperature over the last dimension.

y = softmax(x / temperature, dim=-1)

Used when sharpening or flattening attention scores or sampling logits.
The kernel must accept any number of rows and any row length, so extra
shapes are offered through get_input_variants().
"""
import torch
import torch.nn as nn

ROWS = 2048
COLS = 512
TEMPERATURE = 0.7


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        return torch.softmax(x / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 3.0]


def get_input_variants():
    # Odd row lengths (not a multiple of any vector width), a single long
    # row, many short rows and a 3-D input whose leading dims are flattened.
    return [
        [torch.randn(37, 1001) * 3.0],
        [torch.randn(1, 4099) * 3.0],
        [torch.randn(5000, 7) * 3.0],
        [torch.randn(4, 33, 250) * 3.0],
    ]


def get_init_inputs():
    return [TEMPERATURE]
