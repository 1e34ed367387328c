"""Losses (cross entropy with class indices, smooth L1, KL divergence, triplet margin) with their reductions:
captured as nodes the backends know (engine/losses.py) from `tests/problems/engine/losses_*.py`, the programs
computing what torch computes. Both backends' solutions are judged in test_op_families.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROBLEMS
from tests.engine.judged import assert_program_computes_the_reference, assert_refused

CASES = {path.stem: path for path in sorted((PROBLEMS / "engine").glob("graph_losses_*.py"))}


def test_the_pointwise_losses_compute_the_reference_on_every_input_set() -> None:
    assert_program_computes_the_reference(CASES["graph_losses_pointwise"], rtol=1e-5, atol=1e-6)


def test_cross_entropy_picks_each_target_by_comparing_it_with_the_class_index() -> None:
    program = assert_program_computes_the_reference(CASES["graph_losses_classes"], rtol=1e-5, atol=1e-6)
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
    assert_refused(CASES["graph_losses_classes"], tmp_path, change, into,
                   r"^builtin engine: cannot lower aten.cross_entropy \(with class weights or label smoothing\)")
