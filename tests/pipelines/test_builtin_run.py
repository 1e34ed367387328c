"""How many variants the builtin engine's run judges by default: a few C++ builds on the CPU, a dozen Triton
variants on a GPU. The harness is replaced by a scripted judge here (equal timings, every variant correct),
so only the engine's choice of variants is exercised; the real harness runs in tests/engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.pipelines.builtin import BuiltinRun, default_variants
from kforge.problem import load_problem
from kforge.store import Store
from kforge.verify.verdict import Outcome, TimingStats, Verdict
from tests.conftest import PROBLEMS

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

PROBLEM = load_problem(PROBLEMS / "engine" / "linear_gelu.py")


def judged_by_default(tmp_path: Path, platform: str, language: str) -> tuple[list[str], list[str]]:
    """The sources the run judged, and its progress lines."""
    judged: list[str] = []
    said: list[str] = []

    def judge(source: str) -> Verdict:
        judged.append(source)
        stats = TimingStats(median_ms=1.0, mean_ms=1.0, min_ms=1.0, max_ms=1.0, iqr_ms=0.0, repeats=10)
        return Verdict(verdict=Outcome.CORRECT, reason="ok", platform=platform, language=language,
                       runtime_ms=1.0, timing=stats)

    with Store(tmp_path / f"{platform}-{language}.db") as store:
        run = store.create_run(command="optimize")
        engine = BuiltinRun(store, run.id, platform, language, judge, lambda event: said.append(event.text))
        result = engine.run(PROBLEM)
    assert result.best is not None and result.best.source == judged[0]  # equal timings: the default stays
    return judged, said


@pytest.mark.parametrize(("platform", "language", "expected"), [
    ("cpu", "cpp", 3), ("cuda", "triton", 12), ("cpu", "triton", 3)])
def test_default_number_of_variants_by_platform_and_language(tmp_path: Path, platform: str, language: str,
                                                              expected: int) -> None:
    assert default_variants(platform, language) == expected
    judged, said = judged_by_default(tmp_path, platform, language)
    assert f"builtin: {expected} variant(s) to judge" in said
    assert 1 <= len(judged) <= expected and len(set(judged)) == len(judged)
    if expected > 8:  # more than the tuner judges exhaustively: a coarse sweep, then the best's neighbours
        assert len(judged) > 3


def _equal_judge(platform: str, language: str):  # type: ignore[no-untyped-def]
    def judge(source: str) -> Verdict:
        stats = TimingStats(median_ms=1.0, mean_ms=1.0, min_ms=1.0, max_ms=1.0, iqr_ms=0.0, repeats=10)
        return Verdict(verdict=Outcome.CORRECT, reason="ok", platform=platform, language=language,
                       runtime_ms=1.0, timing=stats)
    return judge


def test_compiled_variants_are_built_side_by_side_before_any_is_judged(tmp_path: Path) -> None:
    order: list[str] = []

    def prebuild(sources: list[str]) -> None:
        order.append(f"prebuild {len(sources)}")

    def judge(source: str) -> Verdict:
        order.append("judge")
        return _equal_judge("cpu", "cpp")(source)

    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        BuiltinRun(store, run.id, "cpu", "cpp", judge, prebuild=prebuild).run(PROBLEM)
        assert order[0] == "prebuild 3" and order.count("judge") == 3 and order.count("prebuild 3") == 1
        # Resumed: every variant is in the store already, so nothing is compiled ahead again.
        order.clear()
        BuiltinRun(store, run.id, "cpu", "cpp", judge, prebuild=prebuild).run(PROBLEM)
        assert not any(step.startswith("prebuild") for step in order)
        # Triton compiles at its first call: nothing to build ahead.
        triton_run = store.create_run(command="optimize")
        BuiltinRun(store, triton_run.id, "cpu", "triton", _equal_judge("cpu", "triton"), prebuild=prebuild).run(PROBLEM)
        assert not any(step.startswith("prebuild") for step in order)
