"""One LSTM step written with two linears and four gates; returns the new hidden state and cell state.

Family: whole small networks, with several outputs (GEMMs, gates, and a state carried through tanh).
"""
import torch
import torch.nn as nn

BATCH = 128
INPUT_SIZE = 384
HIDDEN = 384

OUTPUT_SHAPES = [(BATCH, HIDDEN), (BATCH, HIDDEN)]


class Model(nn.Module):
    def __init__(self, input_size, hidden):
        super().__init__()
        self.from_input = nn.Linear(input_size, 4 * hidden)
        self.from_hidden = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x, h, c):
        gates = self.from_input(x) + self.from_hidden(h)
        i, f, g, o = gates.chunk(4, dim=-1)
        c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_next = torch.sigmoid(o) * torch.tanh(c_next)
        return h_next, c_next


def get_inputs():
    return [torch.randn(BATCH, INPUT_SIZE), torch.randn(BATCH, HIDDEN), torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN]
