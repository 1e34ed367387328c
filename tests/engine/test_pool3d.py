"""3-D pooling (max_pool3d, avg_pool3d, adaptive average pooling over three dims): captured as the pool ops the
1-D and 2-D forms use, with one window size a dim, and lowered by both backends, whose solutions the harness
judges on every input set of `tests/problems/engine/pool3d_windows.py` (odd sizes; stride, padding, dilation,
ceil mode, padding left out of the divisor)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import capture
from kforge.problem import load_problem
from tests.conftest import PROBLEMS
from tests.engine.judged import LANGUAGES, assert_default_solution_correct
from tests.engine.test_capture import params_of

PROBLEM = PROBLEMS / "engine" / "pool3d_windows.py"


def test_each_pool_keeps_three_window_sizes_and_the_program_computes_the_reference() -> None:
    problem = load_problem(PROBLEM)
    program = capture(problem).program
    pools = [node for node in program.nodes if node.op in ir.WINDOW_OPS]
    assert [(node.op, node.attr("kernel"), node.attr("stride")) for node in pools] == [
        ("max_pool", (3, 2, 3), (2, 1, 2)), ("avg_pool", (3, 3, 3), (2, 2, 2)), ("avg_pool", (7, 3, 5), (7, 3, 5))]
    model = problem.make_model(0)
    for inputs in problem.input_sets(0):
        with torch.no_grad():
            expected = model(*inputs)
        for got, want in zip(ir.evaluate(program, inputs, params_of(model)), expected, strict=True):
            torch.testing.assert_close(got, want)


def test_an_adaptive_pool_to_a_size_that_does_not_divide_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "uneven.py"
    path.write_text(PROBLEM.read_text().replace("AdaptiveAvgPool3d((1, 3, 2))", "AdaptiveAvgPool3d((2, 4, 3))"))
    with pytest.raises(ValueError, match=r"cannot lower aten.adaptive_avg_pool3d \(to a size that does not divide"):
        capture(load_problem(path))


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_solutions_are_right_on_every_input_set(tmp_path: Path, language: str) -> None:
    assert_default_solution_correct(PROBLEM, tmp_path, language)
