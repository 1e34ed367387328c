"""`examples/linear_gelu_tanh` at a size that keeps two CPU cores busy for about 7 ms per call.

A benchmark problem, not an example: the spread benchmark times a kernel whose device time dwarfs the
host's launch jitter (a few tens of microseconds per call on the machines we measured), so that the figure
says how steady the harness is, not how steady the host's Python is. Any shape-generic solution of the
example (`examples/linear_gelu_tanh/solution_*.py`) solves it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 512
IN_FEATURES = 1024
OUT_FEATURES = 1024


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh")


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
