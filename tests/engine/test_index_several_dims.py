"""Indexing several dims at once (x[:, 1:5, 2]): captured as one slice a dim and a view, and lowered by both
backends, each solution judged by the harness on every input variant. The C++ solution reads a copy of the
input's cut: it must hold that copy until its kernel is done (it once read the freed memory)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options

PROBLEM = PROBLEMS / "engine" / "index_several_dims.py"


def test_several_dims_are_cut_one_after_another_and_the_program_computes_the_reference() -> None:
    problem = load_problem(PROBLEM)
    program = capture(problem).program
    slices = [node for node in program.nodes if node.op == "slice"]
    assert [(node.attr("dim"), node.attr("start"), node.attr("stop")) for node in slices] == [
        (1, 1, 5), (2, 2, 3), (0, 2, 3), (1, 2, 3), (2, 3, 7)]
    model = problem.make_model(0)
    for inputs in problem.input_sets(0):
        [got] = ir.evaluate(program, inputs, dict(model.named_parameters()))
        torch.testing.assert_close(got, model(*inputs))


def test_a_strided_slice_among_several_cut_dims_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "strided.py"
    path.write_text(PROBLEM.read_text().replace("x[:, 1:5, 2]", "x[:, 1:8:2, 2]"))
    with pytest.raises(LoweringError, match=r"constant slices of step 1 only"):
        capture(load_problem(path))


@pytest.mark.parametrize("language", [
    pytest.param("cpp", marks=pytest.mark.slow),
    pytest.param("triton", marks=pytest.mark.skipif(
        __import__("importlib").util.find_spec("triton") is None, reason="Triton is not installed")),
])
def test_the_solutions_are_right_on_every_input_set(tmp_path: Path, language: str) -> None:
    solution = tmp_path / f"solution_{language}.py"
    solution.write_text(propose(load_problem(PROBLEM), language, limit=1).variants[0].source)
    verdict = evaluate(PROBLEM, solution, fast_options(language=language, trials=2))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
