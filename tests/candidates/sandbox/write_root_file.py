"""Escape for tests/problems/leaky_scale.py, judged with the static policy off: appends to @PATH@, a file of root's
(mode 0644) outside the worker's directory, and creates a file beside it, as a worker left uid 0 would own the
right to (issue 38: least privilege). Its forward raises what happened."""

import os

import torch
import torch.nn as nn


def attempt(call):
    try:
        call()
        return "done"
    except OSError as exc:
        return f"error {exc.errno}"


def append():
    with open("@PATH@", "a") as file:
        file.write("escaped\n")


def create():
    with open(os.path.join(os.path.dirname("@PATH@"), "planted.txt"), "x") as file:
        file.write("escaped\n")


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        raise RuntimeError(f"appending to root's file: {attempt(append)}; creating beside it: {attempt(create)}")
