"""Fork bomb for tests/problems/leaky_scale.py, judged with the static policy off: while it is built (before the
run phase refuses processes) it starts processes that stop themselves and stay (a shell, which the sandbox lets a
build run, through posix_spawn: forking a process holding torch costs tens of milliseconds each), until one fails
to start or @MOST@ are alive. Its forward raises how many it started and how the last start ended."""

import os

import torch
import torch.nn as nn

started, ended = 0, "no failure"
while started < @MOST@:
    try:
        os.posix_spawn("/bin/sh", ["sh", "-c", "kill -STOP $$"], {})
    except OSError as exc:
        ended = f"error {exc.errno}"
        break
    started += 1


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        raise RuntimeError(f"started {started} processes, then {ended}")
