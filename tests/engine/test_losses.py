"""Losses (cross entropy with class indices, smooth L1, KL divergence, triplet margin) with their reductions:
captured as nodes the backends know (engine/losses.py), the programs computing what torch computes, and both
backends' solutions judged by the harness on every input set of `tests/problems/engine/losses_*.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
from kforge.problem import load_problem
from tests.conftest import PROBLEMS
from tests.engine.judged import LANGUAGES, assert_default_solution_correct
from tests.engine.test_capture import params_of

CASES = {path.stem: path for path in sorted((PROBLEMS / "engine").glob("losses_*.py"))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_program_computes_the_reference_on_every_input_set(name: str) -> None:
    problem = load_problem(CASES[name])
    program = capture(problem).program
    model = problem.make_model(0)
    for inputs in problem.input_sets(0):
        with torch.no_grad():
            expected = model(*inputs)
        got = ir.evaluate(program, inputs, params_of(model))
        assert len(got) == len(expected)
        for value, want in zip(got, expected, strict=True):
            torch.testing.assert_close(value, want, rtol=1e-5, atol=1e-6)


def test_cross_entropy_picks_each_target_by_comparing_it_with_the_class_index() -> None:
    program = capture(load_problem(CASES["losses_classes"])).program
    fills = [node for node in program.nodes if node.op == "fill"]
    assert [(node.shape, node.dtype, node.attr("dim")) for node in fills] == [((1, 11, 1), "int64", 1),
                                                                              ((1, 9), "int64", 1)]
    ignored = [node for node in program.nodes if node.op == "ne"]
    assert [node.args[1] for node in ignored] == [-100.0, 3.0]


@pytest.mark.parametrize(("change", "into"), [
    ('F.cross_entropy(scores, labels, ignore_index=3)', "F.cross_entropy(scores, labels, label_smoothing=0.1)"),
    ('nn.CrossEntropyLoss(reduction="none")', 'nn.CrossEntropyLoss(reduction="none", weight=torch.rand(11))'),
])
def test_options_without_a_lowering_are_refused_in_one_line(tmp_path: Path, change: str, into: str) -> None:
    path = tmp_path / "refused.py"
    path.write_text(CASES["losses_classes"].read_text().replace(change, into))
    refusal = r"^builtin engine: cannot lower aten.cross_entropy \(with class weights or label smoothing\)"
    with pytest.raises(LoweringError, match=refusal) as error:
        capture(load_problem(path))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_solutions_are_right_on_every_input_set(tmp_path: Path, name: str, language: str) -> None:
    assert_default_solution_correct(CASES[name], tmp_path, language)
