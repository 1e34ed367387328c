"""3-D pooling (max_pool3d, avg_pool3d, adaptive average pooling over three dims): captured as the pool ops the
1-D and 2-D forms use, with one window size a dim (`tests/problems/engine/graph_pool3d_windows.py`: odd sizes; stride,
padding, dilation, ceil mode, padding left out of the divisor). Both backends' solutions are judged in
test_op_families.py."""

from __future__ import annotations

from pathlib import Path

from kforge.engine import ir
from tests.conftest import PROBLEMS
from tests.engine.judged import assert_program_computes_the_reference, assert_refused

PROBLEM = PROBLEMS / "engine" / "graph_pool3d_windows.py"


def test_each_pool_keeps_three_window_sizes_and_the_program_computes_the_reference() -> None:
    program = assert_program_computes_the_reference(PROBLEM)
    pools = [node for node in program.nodes if node.op in ir.WINDOW_OPS]
    assert [(node.op, node.attr("kernel"), node.attr("stride")) for node in pools] == [
        ("max_pool", (3, 2, 3), (2, 1, 2)), ("avg_pool", (3, 3, 3), (2, 2, 2)), ("avg_pool", (7, 3, 5), (7, 3, 5))]


def test_an_adaptive_pool_to_a_size_that_does_not_divide_is_refused_in_one_line(tmp_path: Path) -> None:
    assert_refused(PROBLEM, tmp_path, "AdaptiveAvgPool3d((1, 3, 2))", "AdaptiveAvgPool3d((2, 4, 3))",
                   r"cannot lower aten.adaptive_avg_pool3d \(to a size that does not divide")
