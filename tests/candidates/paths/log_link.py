"""Path trick for tests/problems/leaky_scale.py: prints a line, replaces the worker's log with a symbolic link to
@TARGET@ (a file the sandbox lets it not read, or /dev/zero), and ends its process, so that the harness, reading
the dead worker's log for the verdict's reason, would read the link's target instead: the file's content in the
verdict, or /dev/zero until the harness runs out of memory. The test fills in @TARGET@."""

import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        print("the candidate's own last words", flush=True)
        os.unlink("worker.log")
        os.symlink("@TARGET@", "worker.log")
        os._exit(3)
