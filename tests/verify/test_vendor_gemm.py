"""The vendor-GEMM policy through the real harness: a candidate calling F.linear for its product and its own
Triton kernel for the epilogue (run by Triton's interpreter on the cpu platform)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, PROBLEMS, fast_options

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

PROBLEM = PROBLEMS / "engine" / "linear_gelu.py"
CANDIDATE = CANDIDATES / "linear_gelu" / "triton_vendor_linear.py"


def test_vendor_linear_with_its_own_epilogue_is_correct_when_the_policy_allows_it() -> None:
    verdict = evaluate(PROBLEM, CANDIDATE, fast_options(policy=Policy().allowing_vendor_gemm()))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason


def test_vendor_linear_is_rejected_under_the_default_policy() -> None:
    verdict = evaluate(PROBLEM, CANDIDATE, fast_options())
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "static.framework-compute", verdict.reason


def test_the_dynamic_check_still_rejects_what_the_vendor_policy_does_not_allow(tmp_path: Path) -> None:
    # Static checks off: only the operators the candidate dispatched are judged. F.linear is allowed, the
    # GELU it runs through PyTorch is not.
    source = CANDIDATE.read_text().replace("_gelu_tanh_half[(triton.cdiv(n, block),)](y, out, n, BLOCK=block)",
                                           "out = F.gelu(y, approximate='tanh') * 0.5")
    assert source != CANDIDATE.read_text()
    candidate = tmp_path / "torch_gelu.py"
    candidate.write_text(source)
    verdict = evaluate(PROBLEM, candidate, fast_options(policy=Policy(static_checks=False).allowing_vendor_gemm()))
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.framework-op", verdict.reason
    assert "aten::gelu" in verdict.reason
