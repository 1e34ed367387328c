"""Memory trick for tests/problems/leaky_scale.py, judged with the static policy off: while it is built it writes
@COUNT@ files of @MIB@ MiB into the worker's directory, which lives in RAM (/dev/shm), each under the file-size
limit; with @UNNAMED@ true it removes each file's name and keeps it open, so that it lies in no directory. Then it
waits, for the harness's memory watch to read it. The files are in RAM either way, and no resident set counts them."""

import os
import time

import torch
import torch.nn as nn

kept = []
block = b"\1" * (1 << 20)
for index in range(@COUNT@):
    name = f"filler-{index}.bin"
    file = open(name, "wb")  # noqa: SIM115 (held open on purpose)
    for _ in range(@MIB@):
        file.write(block)
    file.flush()
    if @UNNAMED@:
        os.unlink(name)
    kept.append(file)
time.sleep(5)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        y = x * self.scale
        return torch.where(y > 0, y, 0.1 * y)
