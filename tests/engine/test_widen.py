"""Half-precision problems on the C++ backend, which computes in float32 (engine/widen.py): the program's float32
twin, and a solution that widens at the edges and returns what the reference does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine import widen
from kforge.engine.capture import capture
from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options

HALF = PROBLEMS / "engine" / "graph_half_linear_two_outputs.py"


def test_the_float32_twin_keeps_everything_but_the_half_dtypes() -> None:
    program = capture(load_problem(HALF)).program
    assert widen.has_half(program)
    twin = widen.widened(program)
    assert not widen.has_half(twin)
    assert [spec.shape for spec in twin.inputs] == [spec.shape for spec in program.inputs]
    assert [node.op for node in twin.all_nodes()] == [node.op for node in program.all_nodes()]
    assert twin.outputs == program.outputs and "computed in float32" in twin.notes[-1]
    assert widen.output_dtypes(program) == ["torch.float16", "torch.float16"]


def test_a_half_problem_gets_a_cpp_solution_that_narrows_each_output_and_passes_the_policy() -> None:
    candidates = propose(load_problem(HALF), "cpp", limit=1)
    source = candidates.variants[0].source
    assert source.count("\nclass ModelNew(_Float32Model):") == 1 and "\nclass _Float32Model(" in source
    assert "_OUTPUT_DTYPES = (torch.float16, torch.float16,)" in source
    assert check_source(source, Policy(), None) == []


def test_the_edges_refuse_a_solution_without_exactly_one_model() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        widen.with_half_edges("class Other:\n    pass\n", ["torch.float16"], single=True)


@pytest.mark.slow
def test_the_half_problem_is_judged_correct_in_cpp(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(propose(load_problem(HALF), "cpp", limit=1).variants[0].source)
    verdict = evaluate(HALF, solution, fast_options(language="cpp", trials=2, measure=False))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
