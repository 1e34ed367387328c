"""A problem's memory estimate (suite/memory.py): its reference traced on the meta device, on problems small enough
that the true figures are known by hand, and the formula that turns one call's figures into an evaluation's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.suite.memory import Estimate, Footprint, estimate, footprint, needed_bytes
from kforge.verify.outside_clock import MAX_STAGED_BYTES

HEADER = "import torch\nimport torch.nn as nn\n\n\n"
MLP = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024))

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
'''


def traced(tmp_path: Path, source: str) -> Footprint:
    from kforge.problem import load_problem

    path = tmp_path / "problem.py"
    path.write_text(source)
    problem = load_problem(path, check_runs=False)
    return footprint(problem.make_model, problem.input_sets)


def test_an_mlp_holds_its_weights_its_input_its_output_and_two_hidden_activations_at_once(tmp_path: Path) -> None:
    found = traced(tmp_path, MLP)
    assert found.parameters == (1024 * 4096 + 4096 + 4096 * 1024 + 1024) * 4
    assert found.inputs == found.outputs == 64 * 1024 * 4
    # The first layer's output is still alive while ReLU writes its own: two hidden activations at the peak.
    assert found.transient == 2 * 64 * 4096 * 4


def test_views_and_in_place_writes_of_an_input_make_nothing_new(tmp_path: Path) -> None:
    source = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x.view(-1)


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
'''
    found = traced(tmp_path, source)
    assert (found.parameters, found.transient) == (0, 0)
    assert found.outputs == 256 * 256 * 4  # what a kept copy of the output takes


def test_shared_weights_count_once_and_the_largest_input_variant_counts(tmp_path: Path) -> None:
    source = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32, bias=False)
        self.b = self.a

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_input_variants():
    return [[torch.randn(100, 32)]]


def get_init_inputs():
    return []
'''
    found = traced(tmp_path, source)
    assert found.parameters == 32 * 32 * 4
    assert found.inputs == found.outputs == 100 * 32 * 4
    assert found.transient == 2 * 100 * 32 * 4


def test_a_model_that_converts_itself_and_inputs_drawn_with_numpy_are_traced(tmp_path: Path) -> None:
    source = HEADER + '''import numpy as np


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(128, 64)
        self.half()

    def forward(self, x):
        return self.lin(x)


def get_inputs():
    return [torch.from_numpy(np.ones((16, 128), dtype=np.float16))]


def get_init_inputs():
    return []
'''
    found = traced(tmp_path, source)
    assert found.parameters == (128 * 64 + 64) * 2
    assert (found.inputs, found.outputs) == (16 * 128 * 2, 16 * 64 * 2)


def test_a_problem_far_larger_than_this_machine_is_estimated_without_allocating_it(tmp_path: Path) -> None:
    source = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(16 * 2**30)]  # 64 GiB


def get_init_inputs():
    return []
'''
    found = traced(tmp_path, source)
    assert found.inputs == found.outputs == 64 * 2**30
    assert found.transient == 2 * 64 * 2**30  # relu's output, then the product, while relu's is still held


def test_the_formula_sums_the_harness_the_candidates_worker_and_the_references_worker() -> None:
    gb = 10**9
    one_call = Footprint(parameters=1 * gb, inputs=2 * gb, outputs=1 * gb, transient=3 * gb)
    harness = 1 + 2 * 2 + 2 * 1 + 3
    staging = 2 * (2 + 1)  # two calls' inputs and outputs: more than the 1 GiB cap
    candidate = 1 + (3 + 1) * 2 + 2 * 1 + 3 + staging
    reference = 2 * 1 + (3 + 1) * 2 + 2 * 1 + 3
    assert needed_bytes(one_call, rotate=3) == (harness + candidate + reference) * gb
    tiny = Footprint(parameters=0, inputs=0, outputs=0, transient=0)
    assert needed_bytes(tiny) == MAX_STAGED_BYTES  # the outside clock's staging is the floor


@pytest.mark.parametrize(("body", "why"), [
    ("return x[x > 0]", "NotImplementedError"),  # a shape that depends on the data
    ("return x * x.sum().item()", "item()"),  # a value read back from the device
])
def test_a_reference_that_cannot_be_traced_has_no_estimate_and_says_why(tmp_path: Path, body: str, why: str) -> None:
    path = tmp_path / "problem.py"
    path.write_text(HEADER + f"class Model(nn.Module):\n    def forward(self, x):\n        {body}\n\n\n"
                    "def get_inputs():\n    return [torch.randn(8)]\n\n\ndef get_init_inputs():\n    return []\n")
    found = estimate(path)
    assert found.bytes is None and why in found.reason
    assert found.reason.startswith("its reference could not be traced")


def test_a_problem_that_does_not_load_has_no_estimate(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('not today')\n")
    found = estimate(path)
    assert found == Estimate(None, found.reason) and "does not import" in found.reason


def test_an_estimate_is_the_formula_on_the_traced_call(tmp_path: Path) -> None:
    path = tmp_path / "problem.py"
    path.write_text(MLP)
    assert estimate(path) == Estimate(needed_bytes(traced(tmp_path, MLP)))
