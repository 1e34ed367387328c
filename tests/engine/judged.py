"""What the op-family tests share: the two languages the engine writes, and the harness's verdict on the engine's
default solution for a problem, on every input set the problem defines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

# C++ compiles (slow); Triton runs in its CPU interpreter.
LANGUAGES = [
    pytest.param("cpp", marks=pytest.mark.slow),
    pytest.param("triton", marks=pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                                    reason="Triton is not installed")),
]


def assert_default_solution_correct(problem: Path, folder: Path, language: str) -> None:
    """The engine's default solution for `problem` in `language`, judged correct by the harness."""
    solution = folder / f"solution_{language}.py"
    solution.write_text(propose(load_problem(problem), language, limit=1).variants[0].source)
    verdict = evaluate(problem, solution, fast_options(language=language, trials=2))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
