"""What the op-family tests share: the program capture makes computing what the reference computes, a refusal in
one line, the two languages the engine writes, and the harness's verdict on the engine's default solution for a
problem, on every input set the problem defines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
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


def assert_refused(problem: Path, folder: Path, change: str, into: str, reason: str) -> None:
    """`problem` with `change` written as `into` is refused by capture in one line matching `reason`."""
    path = folder / "refused.py"
    text = problem.read_text()
    assert change in text
    path.write_text(text.replace(change, into))
    with pytest.raises(LoweringError, match=reason) as error:
        capture(load_problem(path))
    assert "\n" not in str(error.value)


def assert_program_computes_the_reference(problem_path: Path, rtol: float = 1e-5, atol: float = 1e-5) -> ir.Program:
    """The captured program's outputs against the reference's on every input set; the program."""
    problem = load_problem(problem_path)
    program = capture(problem).program
    model = problem.make_model(0)
    params = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for inputs in problem.input_sets(0):
        with torch.no_grad():
            expected = model(*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        got = ir.evaluate(program, inputs, params)
        assert len(got) == len(expected)
        for value, want in zip(got, expected, strict=True):
            torch.testing.assert_close(value, want, rtol=rtol, atol=atol)
    return program
