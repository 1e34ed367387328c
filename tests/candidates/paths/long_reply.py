"""Protocol trick for tests/problems/leaky_scale.py: writes @BYTES@ bytes without a newline on the worker's reply
channel (found in the frame of the worker's serving loop), then waits, so that a harness collecting the reply line
holds all of it in memory (a candidate writing without end would hold the harness until its memory ran out)."""

import os
import sys
import time

import torch
import torch.nn as nn


def _reply_channel():
    frame = sys._getframe()
    while frame.f_code.co_name != "serve":
        frame = frame.f_back
    return frame.f_locals["reply"].fileno()


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        channel = _reply_channel()
        chunk = b"x" * (1 << 20)
        for _ in range(@BYTES@ >> 20):
            os.write(channel, chunk)
        while True:
            time.sleep(1)
