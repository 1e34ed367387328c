"""Reshapes of reshapes are one reshape, and a reshape back to a value's own shape is none: in a kernel's
Python prelude (Triton) and between kernels (the composed forward), where each costs the host microseconds on
every call. The kernels written that way stay correct (judged by the harness, Triton's CPU interpreter)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"
# (x * y).sum(): the inputs are merged to one dim and split in parts of their own shape again (regroup), and the
# parts' sum is viewed as (1,) and then as a scalar.
FULL_SUM = SUITE / "reduce_full_sum_of_product.py"


def _method(source: str, cls: str) -> str:
    start = source.index(f"class {cls}(")
    end = source.find("\nclass ", start + 1)
    return source[start:end if end != -1 else len(source)]


def test_a_kernel_reads_an_input_reshaped_back_to_its_own_shape_as_it_is() -> None:
    source = propose(load_problem(FULL_SUM), "triton", limit=1).variants[0].source
    prelude = _method(source, "_Kernel0").split("        if ", 1)[0]
    assert not re.search(r"\.reshape\(", prelude), prelude
    assert re.search(r"= in_x\n", prelude) and re.search(r"= in_y\n", prelude), prelude


@pytest.mark.parametrize("language", ["triton", "cpp"])
def test_the_composed_forward_reshapes_a_value_once(language: str) -> None:
    source = propose(load_problem(FULL_SUM), language, limit=1).variants[0].source
    forward = _method(source, "ModelNew")
    # Triton's composed forward reshapes through `_reshape` (a copy kernel where no view can do it)
    reshape = "_reshape(" if language == "triton" else ".reshape("
    assert forward.count(reshape) == 1, forward
    assert re.search(r"reshape\(.*\(\)\)", forward), forward


def test_the_collapsed_reshapes_are_correct_in_the_triton_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    solution = tmp_path / "solution.py"
    solution.write_text(propose(load_problem(FULL_SUM), "triton", limit=1).variants[0].source)
    verdict = evaluate(FULL_SUM, solution, fast_options(platform="cpu", language="triton", trials=2))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
