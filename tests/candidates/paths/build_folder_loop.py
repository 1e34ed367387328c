"""Path trick for a prebuild (verify/prebuild.py): while it is imported, plants a loop of symbolic links in the build
folder it may write, and answers the build request itself, before the worker does, naming a folder through that
loop as one of its libraries, hoping that the harness follows the folder (Python's Path.resolve raises
RuntimeError on a loop) or keeps what lies behind it."""

import json
import os
import sys

import torch
import torch.nn as nn

_cache = sys.argv[sys.argv.index("--cache-dir") + 1]
_loop = os.path.join(_cache, "kforge-test-loop")
os.makedirs(_loop, exist_ok=True)
for _name, _target in (("a", "b"), ("b", "a")):
    if not os.path.islink(os.path.join(_loop, _name)):
        os.symlink(_target, os.path.join(_loop, _name))
_reply = {"ok": True, "build_s": 0.0, "builds": 1,
          "libraries": [{"name": "looped", "folder": os.path.join(_loop, "a")}]}
os.write(int(sys.argv[sys.argv.index("--reply-fd") + 1]), (json.dumps(_reply) + "\n").encode())


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))

    def forward(self, x):
        return x * self.scale
