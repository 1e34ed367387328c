"""The engine suite (benchmarks/engine_suite): every problem loads, and its reference runs on the CPU and returns
finite tensors of the shapes the file declares in OUTPUT_SHAPES; the folder holds enough problems, and every
family its README lists has at least one of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kforge.problem import load_problem

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"
PROBLEMS = sorted(SUITE.glob("*.py"))
# A row of the README's family table starts with the prefix in backquotes: | `norm_` | ...
FAMILY_ROW = re.compile(r"^\|\s*`([a-z0-9]+)_`\s*\|", re.MULTILINE)


def readme_families() -> list[str]:
    return FAMILY_ROW.findall((SUITE / "README.md").read_text())


def family(path: Path) -> str:
    return path.stem.split("_", 1)[0]


@pytest.mark.parametrize("path", PROBLEMS, ids=[path.stem for path in PROBLEMS])
def test_reference_runs_on_the_cpu_and_returns_finite_tensors_of_the_declared_shapes(path: Path) -> None:
    problem = load_problem(path)  # imports and validates it, runs the reference, and checks a second call agrees
    doc = (problem.module.__doc__ or "").strip()
    assert doc, f"{path.name} has no module docstring"
    assert family(path) in readme_families(), f"{path.name}: family {family(path)!r} is not in the README's table"
    declared = [tuple(shape) for shape in problem.module.OUTPUT_SHAPES]

    model = problem.make_model(seed=0)
    with torch.no_grad():
        output = model(*problem.inputs(seed=0))
    outputs = list(output) if isinstance(output, tuple) else [output]
    assert all(isinstance(item, torch.Tensor) for item in outputs), [type(item).__name__ for item in outputs]
    assert [tuple(item.shape) for item in outputs] == declared
    for index, item in enumerate(outputs):
        assert item.device.type == "cpu"
        assert bool(torch.isfinite(item).all()), f"output {index} of {path.name} holds inf or nan"


def test_the_suite_has_at_least_forty_problems() -> None:
    assert len(PROBLEMS) >= 40, [path.name for path in PROBLEMS]


def test_every_family_in_the_readme_has_a_problem() -> None:
    families = readme_families()
    assert len(families) >= 10, families
    present = {family(path) for path in PROBLEMS}
    assert not [name for name in families if name not in present], sorted(present)


def test_the_readme_lists_every_problem() -> None:
    text = (SUITE / "README.md").read_text()
    assert not [path.stem for path in PROBLEMS if f"`{path.stem}`" not in text]


def test_some_problems_run_in_half_precision() -> None:
    low = [path.name for path in PROBLEMS if path.stem.endswith(("_fp16", "_bf16"))]
    assert len(low) >= 3, low
