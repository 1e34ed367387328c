"""The single-shot examples shown to the generation agent must themselves pass the harness."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

EXAMPLES = Path(str(resources.files("kforge").joinpath("data/examples")))


@pytest.mark.slow
def test_cpu_cpp_example_is_correct() -> None:
    folder = EXAMPLES / "cpu" / "cpp"
    verdict = evaluate(folder / "problem.py", folder / "solution.py", fast_options())
    assert verdict.verdict == Outcome.CORRECT, verdict.reason


@pytest.mark.gpu
@pytest.mark.parametrize("language", ["cuda", "triton"])
def test_cuda_examples_are_correct(language: str) -> None:
    folder = EXAMPLES / "cuda" / language
    verdict = evaluate(folder / "problem.py", folder / "solution.py", fast_options(platform="cuda"))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.speedup_vs_eager is None or verdict.speedup_vs_eager > 0
