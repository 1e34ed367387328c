"""Run-phase probe for tests/problems/leaky_scale.py, judged as a C++ candidate with the static policy off (it
has no C++ of its own, so nothing is built and the test stays quick): its forward starts a thread, forks, and
connects to the Unix socket at @SOCKET@, a listener the test started outside the worker, to hand it a canary.
It raises what happened to each."""

import os
import socket
import threading

import torch
import torch.nn as nn


def attempt(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return f"error {exc.errno}"


def fork():
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)


def connect():
    with socket.socket(socket.AF_UNIX) as endpoint:
        endpoint.connect("@SOCKET@")
        endpoint.sendall(b"escaped the sandbox")


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        done = []
        thread = threading.Thread(target=lambda: done.append(1))
        thread.start()
        thread.join()
        raise RuntimeError(f"thread: {'ok' if done else 'none'}; fork: {attempt(fork)}; "
                           f"connect: {attempt(connect)}")
