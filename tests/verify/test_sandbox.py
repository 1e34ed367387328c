"""The worker's environment and limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import scrubbed_environment
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options


def test_secrets_are_scrubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_PASSWORD",
                 "KFORGE_DB", "HF_TOKEN"):
        monkeypatch.setenv(name, "secret-value")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    env = scrubbed_environment({}, tmp_path)
    assert "secret-value" not in env.values()
    assert env["OMP_NUM_THREADS"] == "2"
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)


def test_input_variants_are_all_checked() -> None:
    problem = PROBLEMS / "variants_sum_rows.py"
    options = fast_options(policy=POLICY_OFF, measure=False)
    assert evaluate(problem, CANDIDATES / "variants_sum_rows_torch.py", options).verdict == Outcome.CORRECT
    fixed = evaluate(problem, CANDIDATES / "variants_sum_rows_fixed_shape.py", options)
    assert fixed.verdict == Outcome.RUNTIME_ERROR
    assert "shape '[32, 64]' is invalid" in fixed.reason
