"""Path trick for tests/problems/leaky_scale.py: where the worker writes its outputs file, plants a symbolic link
to @TARGET@ instead (a file of the user's outside the worker, or a FIFO), so that the harness reads the link's
target: a file it was never handed, or a FIFO no one writes, on which the harness would wait forever. It swaps the
worker's reference to its tensors module for a stand-in (no watched function is rebound). The test fills in
@TARGET@."""

import os
import sys

import torch
import torch.nn as nn

_worker = sys.modules["kforge.verify.worker"]
_real = _worker.tensors


class _PlantingTensors:
    plain_copy = staticmethod(_real.plain_copy)
    same_bits = staticmethod(_real.same_bits)
    UnsafeOutput = _real.UnsafeOutput

    @staticmethod
    def save(value, path):
        os.symlink("@TARGET@", path)


_worker.tensors = _PlantingTensors


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
