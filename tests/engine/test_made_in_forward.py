"""Tensors made in the forward (torch.tensor, zeros_like/ones_like/full_like, torch.full, new_ones, torch.arange, and
those the trace computes from constants): constants where every user is a pointwise op that broadcasts them
anyway, else `fill` kernels of static shape (`tests/problems/engine/graph_made_in_forward.py`). Both backends'
solutions are judged in test_op_families.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROBLEMS
from tests.engine.judged import assert_program_computes_the_reference, assert_refused

PROBLEM = PROBLEMS / "engine" / "graph_made_in_forward.py"


def test_constants_fold_and_only_tensors_read_in_full_are_filled() -> None:
    program = assert_program_computes_the_reference(PROBLEM)
    fills = {node.name: (node.shape, node.dtype, node.attr("start"), node.attr("step"))
             for node in program.nodes if node.op == "fill"}
    assert fills == {"arange": ((7,), "int64", 0.0, 1.0), "arange_1": ((3,), "float32", 2.0, 3.0),
                     "tensor_1": ((3,), "float32", 0.5, 0.5), "full": ((3, 5), "float32", 2.0, 0.0),
                     "new_ones": ((2, 3), "float32", 1.0, 0.0), "arange_2": ((3,), "int64", 0.0, 1.0),
                     "_tensor_constant0": ((3,), "float32", 0.0, 0.5)}
    first = [node for node in program.nodes if node.name in ("mul", "add", "sub")]
    assert [node.args[1] for node in first] == [1.5, 1.0, 0.25]


@pytest.mark.parametrize(("change", "into", "reason"), [
    ("torch.tensor([0.5, 1.0, 1.5]", "torch.tensor([0.5, 1.0, 2.5]", r"tensor \(of a list of numbers not evenly"),
    ("torch.full((3, 5)", "torch.full((x.shape[0], 5)", r"full \(a tensor made in the forward, of sizes that vary"),
    ("torch.arange(3) * 0.5", "torch.tensor([0.5, 1.0, 2.5])", r"a constant tensor made in the forward \(not one"),
])
def test_tensors_the_kernels_cannot_make_are_refused_in_one_line(tmp_path: Path, change: str, into: str,
                                                                  reason: str) -> None:
    assert_refused(PROBLEM, tmp_path, change, into, reason)
