"""Red team for the build store (issue 38) against tests/problems/leaky_scale.py. From its own worker it tries to
change the honest candidate's stored library and manifest, to read the manifest, to append code to the reference's
Inductor cache and plant a file in its Triton cache, and to write the old shared build folder; and it leaves a
library of its own in a build folder named like the honest candidate's, inside its own directory. It loads, so the
harness keeps what it built, and its forward raises what each attempt did. Opens files from Python: needs the
static policy off. The test fills in @OBJECT@, @ENTRY@, @REFERENCE@, @CACHE@, @FOLDER@ and @LIBRARY@."""

import os

import torch.nn as nn

ATTEMPTS = [
    ("append to the honest library in the store", "@OBJECT@", "ab"),
    ("replace the honest manifest", "@ENTRY@", "w"),
    ("read the honest manifest", "@ENTRY@", "r"),
    ("append code to the reference's Inductor cache", "@REFERENCE@/inductor/planted.py", "a"),
    ("plant a file in the reference's Triton cache", "@REFERENCE@/triton/planted.json", "w"),
    ("write the old shared build folder", "@CACHE@/builds/@FOLDER@/@LIBRARY@", "wb"),
    ("plant a library in its own build folder of the honest name", "builds/@FOLDER@/@LIBRARY@", "wb"),
]


def attempt(path, mode):
    try:
        if mode != "r":
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as file:
            if mode == "r":
                file.read()
            else:
                file.write(b"not a library" if "b" in mode else "import os  # planted\n")
        return "done"
    except OSError as exc:
        return f"refused (errno {exc.errno})"


RESULTS = "; ".join(f"{what}: {attempt(path, mode)}" for what, path, mode in ATTEMPTS)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()

    def forward(self, x):
        raise RuntimeError(RESULTS)
