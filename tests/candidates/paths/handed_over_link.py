"""Path trick for tests/problems/leaky_scale.py: while it is imported, replaces the copies the harness handed over
(solution.py, problem.py) with symbolic links to @TARGET@, a file of the user's outside the worker, so that the
harness, handing a file over again under either name, would read and overwrite the user's file through the link.
The test fills in @TARGET@."""

import os

import torch
import torch.nn as nn

for _name in ("solution.py", "problem.py"):
    os.unlink(_name)
    os.symlink("@TARGET@", _name)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
