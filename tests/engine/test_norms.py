"""Layer norm over several trailing dims (the dims viewed as one, the weights applied after) and vector norms over
given dims (torch.norm, Tensor.norm, torch.linalg.vector_norm), captured from
`tests/problems/engine/graph_norms_trailing.py`. Both backends' solutions are judged in test_op_families.py."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PROBLEMS
from tests.engine.judged import assert_program_computes_the_reference, assert_refused

PROBLEM = PROBLEMS / "engine" / "graph_norms_trailing.py"


def test_a_layer_norm_over_two_dims_is_one_row_norm_over_their_product() -> None:
    program = assert_program_computes_the_reference(PROBLEM)
    rows = [node for node in program.nodes if node.op == "layer_norm"]
    assert [node.shape for node in rows] == [(3, 5, 66), (3, 330)]


def test_a_matrix_norm_is_refused_in_one_line(tmp_path: Path) -> None:
    assert_refused(PROBLEM, tmp_path, "torch.norm(y, dim=(1, 3))", "torch.norm(y, p='nuc', dim=(1, 3))",
                   r"cannot lower aten.norm \(p='nuc': a matrix norm\)")
