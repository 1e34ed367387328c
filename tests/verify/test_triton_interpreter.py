"""Triton candidates on a machine without a GPU: correctness through Triton's interpreter, never timing.

The cpu platform runs Triton's interpreter (TRITON_INTERPRET=1 in the worker), so CI exercises the
Triton path end to end: policy, worker, operator recording, comparison. Skipped where Triton is absent.
"""

from __future__ import annotations

import pytest

from kforge.platforms.cpu import CpuPlatform
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, EXAMPLES, PROBLEMS, fast_options

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

LEAKY = PROBLEMS / "leaky_scale.py"


def test_cpu_platform_accepts_triton_for_correctness_only() -> None:
    platform = CpuPlatform()
    assert "triton" in platform.languages
    assert platform.worker_environment()["TRITON_INTERPRET"] == "1"
    assert "interpreter" in (platform.untimed_reason("triton") or "")
    assert platform.untimed_reason("cpp") is None


def test_honest_triton_candidate_passes_without_timing() -> None:
    verdict = evaluate(LEAKY, CANDIDATES / "leaky_scale" / "triton_honest.py", fast_options())
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.language == "triton" and verdict.platform == "cpu"
    assert verdict.runtime_ms is None and verdict.timing is None and verdict.eager_ms is None
    assert "timing skipped" in verdict.reason
    assert any("interpreter" in warning for warning in verdict.warnings)
    assert verdict.max_abs_error is not None and verdict.max_abs_error < 1e-5


def test_wrong_triton_candidate_fails() -> None:
    verdict = evaluate(LEAKY, CANDIDATES / "leaky_scale" / "triton_wrong_slope.py", fast_options())
    assert verdict.verdict == Outcome.INCORRECT, verdict.reason
    assert "out of tolerance" in verdict.reason


@pytest.mark.slow
def test_example_triton_solution_passes_in_the_interpreter() -> None:
    # A reduction with online log-sum-exp and input variants of awkward shapes; the other examples'
    # Triton solutions run on the GPU suite (the interpreter is slow on their larger grids).
    folder = EXAMPLES / "logmeanexp_pool"
    verdict = evaluate(folder / "problem.py", folder / "solution_triton.py", fast_options())
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
