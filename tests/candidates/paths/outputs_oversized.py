"""Path trick for tests/problems/leaky_scale.py: writes its outputs file, then extends it to @SIZE@ bytes (a sparse
file, costing the worker nothing), so that a harness reading the whole file would need that much memory. It swaps
the worker's reference to its tensors module for a stand-in (no watched function is rebound). The test fills in
@SIZE@."""

import os
import sys

import torch
import torch.nn as nn

_worker = sys.modules["kforge.verify.worker"]
_real = _worker.tensors


class _GrowingTensors:
    plain_copy = staticmethod(_real.plain_copy)
    same_bits = staticmethod(_real.same_bits)
    UnsafeOutput = _real.UnsafeOutput

    @staticmethod
    def save(value, path):
        _real.save(value, path)
        os.truncate(path, @SIZE@)


_worker.tensors = _GrowingTensors


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
