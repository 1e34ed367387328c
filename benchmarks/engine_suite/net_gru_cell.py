"""One GRU step written with two linears and gates: reset, update, candidate; returns the new hidden state.

Family: whole small networks (two GEMMs feeding sigmoid/tanh gates that mix with the old state).
"""
import torch
import torch.nn as nn

BATCH = 128
INPUT_SIZE = 256
HIDDEN = 512

OUTPUT_SHAPES = [(BATCH, HIDDEN)]


class Model(nn.Module):
    def __init__(self, input_size, hidden):
        super().__init__()
        self.from_input = nn.Linear(input_size, 3 * hidden)
        self.from_hidden = nn.Linear(hidden, 3 * hidden)

    def forward(self, x, h):
        xr, xz, xn = self.from_input(x).chunk(3, dim=-1)
        hr, hz, hn = self.from_hidden(h).chunk(3, dim=-1)
        reset = torch.sigmoid(xr + hr)
        update = torch.sigmoid(xz + hz)
        candidate = torch.tanh(xn + reset * hn)
        return (1.0 - update) * candidate + update * h


def get_inputs():
    return [torch.randn(BATCH, INPUT_SIZE), torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN]
