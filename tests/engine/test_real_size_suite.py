"""The real-size suite (benchmarks/problems/real_size): every file is a well-formed problem of a known family, and the
families are all there. Nothing here runs a model at its real size: each is built and called on the meta device
(shapes and dtypes only, no memory, no arithmetic), so the whole file takes seconds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kforge.problem import load_problem

REAL_SIZE = Path(__file__).resolve().parents[2] / "benchmarks" / "problems" / "real_size"
PROBLEMS = sorted(REAL_SIZE.glob("*.py"))
# The least each family holds; the prefix of a file's name (before the first underscore) is its family.
FAMILIES = {"gemm": 6, "conv": 6, "attention": 4, "norm": 4, "reduce": 4, "pointwise": 3, "net": 4}
# The suffix of a file's name is the dtype of its first input.
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "uint8": torch.uint8}
BUDGET_BYTES = 4 * 2**30  # inputs, outputs, parameters and buffers of one problem: room for several variants on 80 GB


def family(path: Path) -> str:
    return path.stem.split("_", 1)[0]


def tensor_bytes(tensors: list[object]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@pytest.mark.parametrize("path", PROBLEMS, ids=[path.stem for path in PROBLEMS])
def test_every_problem_is_well_formed_and_fits_the_budget(path: Path) -> None:
    module = load_problem(path, check_runs=False).module  # imports it and checks Model, get_inputs, get_init_inputs
    doc = (module.__doc__ or "").strip()
    assert doc, f"{path.name} has no module docstring"
    assert re.search(r"FLOP|[KMG]B\b", doc), f"{path.name}: the docstring gives neither FLOPs nor bytes per call"
    assert family(path) in FAMILIES, f"{path.name}: unknown family {family(path)!r}"
    suffix = path.stem.rsplit("_", 1)[-1]
    assert suffix in DTYPES, f"{path.name}: the name does not end in a dtype ({', '.join(DTYPES)})"

    with torch.device("meta"), torch.no_grad():
        model = module.Model(*module.get_init_inputs())
        inputs = list(module.get_inputs())
        output = model(*inputs)
    outputs = list(output) if isinstance(output, tuple) else [output]
    assert all(isinstance(item, torch.Tensor) for item in outputs), [type(item).__name__ for item in outputs]
    tensors = [item for item in inputs if isinstance(item, torch.Tensor)]
    assert tensors and tensors[0].dtype == DTYPES[suffix], f"{path.name}: first input is {tensors[0].dtype}"
    state = [*model.parameters(), *model.buffers()]
    total = tensor_bytes(inputs) + tensor_bytes(outputs) + tensor_bytes(state)
    assert total < BUDGET_BYTES, f"{path.name}: {total / 2**30:.1f} GiB of inputs, outputs and weights"


def test_the_suite_has_forty_problems_and_every_family() -> None:
    assert len(PROBLEMS) >= 40, len(PROBLEMS)
    counts = {name: sum(family(path) == name for path in PROBLEMS) for name in FAMILIES}
    assert all(counts[name] >= least for name, least in FAMILIES.items()), counts


def test_some_problems_run_in_half_precision() -> None:
    half = [path.stem for path in PROBLEMS if path.stem.endswith(("_bf16", "_fp16"))]
    assert len(half) >= 10, half
    assert {family(REAL_SIZE / f"{name}.py") for name in half} >= {"gemm", "conv", "attention", "norm", "net"}


def test_the_readme_lists_every_problem() -> None:
    text = (REAL_SIZE / "README.md").read_text()
    assert not [path.stem for path in PROBLEMS if f"`{path.stem}`" not in text]
