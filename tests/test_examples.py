"""Every bundled example's honest solution passes the harness under the default (strict) policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import EXAMPLES, fast_options

CPP_SOLUTIONS = sorted(EXAMPLES.glob("*/solution_cpp.py"))


@pytest.mark.slow
@pytest.mark.parametrize("solution", CPP_SOLUTIONS, ids=[path.parent.name for path in CPP_SOLUTIONS])
def test_example_cpp_solution_is_correct(solution: Path) -> None:
    verdict = evaluate(solution.parent / "problem.py", solution, fast_options(platform="cpu", baselines=("eager",)))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.speedup_vs_eager is not None and verdict.speedup_vs_eager > 0


def test_there_are_at_least_four_examples() -> None:
    assert len(CPP_SOLUTIONS) >= 4


@pytest.mark.slow
def test_compile_baseline_is_timed() -> None:
    example = CPP_SOLUTIONS[0]
    verdict = evaluate(example.parent / "problem.py", example, fast_options(baselines=("eager", "compile")))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.compile_ms is not None and verdict.compile_ms > 0, verdict.warnings
    assert verdict.speedup_vs_compile is not None
