"""How many variants the builtin engine's run judges by default: a few C++ builds on the CPU, a dozen Triton
variants on a GPU. The harness is replaced by a scripted judge here (equal timings, every variant correct),
so only the engine's choice of variants is exercised; the real harness runs in tests/engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.pipelines.builtin import BuiltinRun, default_variants
from kforge.problem import load_problem
from kforge.store import Store
from kforge.verify.search import Tried
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


def _timed(platform: str, language: str, median_ms: float, correct: bool = True) -> Verdict:
    stats = TimingStats(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms, max_ms=median_ms, iqr_ms=0.0,
                        repeats=10)
    return Verdict(verdict=Outcome.CORRECT if correct else Outcome.INCORRECT, reason="scripted", platform=platform,
                   language=language, runtime_ms=median_ms if correct else None, timing=stats if correct else None)


def test_after_a_search_only_the_quickest_variants_are_judged(tmp_path: Path) -> None:
    """Twelve variants searched: the one wrong in the search is never judged; the quickest is judged, and the
    second because its search time is close; the harness's figures pick between them."""
    judged: list[str] = []
    searched: list[list[str]] = []
    search_ms = {0: 3.0, 1: 1.0, 2: 1.1, 3: 0.5}  # variant 3 is quickest, but wrong

    def search(sources: list[str], floors: list[float | None], budget_s: float | None) -> list[Tried]:
        searched.append(sources)
        return [Tried(index, dropped="incorrect: scripted") if index == 3 else
                Tried(index, median_ms=search_ms.get(index, 5.0), iqr_ms=0.0) for index in range(len(sources))]

    def judge(source: str) -> Verdict:
        judged.append(source)
        index = searched[0].index(source)
        return _timed("cuda", "triton", {1: 2.0, 2: 1.5}[index])

    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        result = BuiltinRun(store, run.id, "cuda", "triton", judge, search=search).run(PROBLEM)
    sources = searched[0]
    assert len(sources) == len(set(sources)) and len(sources) > 4
    assert judged == [sources[1], sources[2]]
    assert result.best is not None and result.best.source == sources[2]  # the harness found it faster
    assert result.stop_reason.startswith(f"builtin engine: searched {len(sources)} of {len(sources)} variant(s)")
    assert "judged 2" in result.stop_reason


def test_a_variant_the_harness_rejects_makes_way_for_the_next(tmp_path: Path) -> None:
    judged: list[int] = []

    def search(sources: list[str], floors: list[float | None], budget_s: float | None) -> list[Tried]:
        return [Tried(index, median_ms=1.0 + index, iqr_ms=0.0) for index in range(len(sources))]

    sources_seen: list[str] = []

    def judge(source: str) -> Verdict:
        sources_seen.append(source)
        judged.append(len(judged))
        return _timed("cuda", "triton", 1.0, correct=len(judged) > 1)

    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        result = BuiltinRun(store, run.id, "cuda", "triton", judge, search=search).run(PROBLEM)
    # The quickest was rejected; the second is far slower in the search but judged since nothing is correct yet.
    assert len(judged) == 2 and result.best is not None and result.best.source == sources_seen[1]


def test_a_resumed_run_reads_its_search_back_and_judges_nothing_twice(tmp_path: Path) -> None:
    """Under other load a second search could rank another variant first and judge it too: a resumed run reads
    the first search's ranking back from the store instead."""
    searches: list[list[str]] = []

    def search(sources: list[str], floors: list[float | None], budget_s: float | None) -> list[Tried]:
        searches.append(sources)
        quickest = len(searches) - 1  # each new search finds another variant quickest
        return [Tried(index, median_ms=0.5 if index == quickest else 5.0, iqr_ms=0.0)
                for index in range(len(sources))]

    judged: list[str] = []

    def judge(source: str) -> Verdict:
        judged.append(source)
        return _timed("cuda", "triton", 1.0)

    said: list[str] = []
    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize")
        first = BuiltinRun(store, run.id, "cuda", "triton", judge, search=search).run(PROBLEM)
        attempts = len(store.attempts_of(run.id))
        again = BuiltinRun(store, run.id, "cuda", "triton", judge, lambda event: said.append(event.text),
                           search=search).run(PROBLEM)
        assert len(store.attempts_of(run.id)) == attempts == 1
    assert len(searches) == 1 and judged == [searches[0][0]]  # the resumed run's verdict is read back too
    assert first.best is not None and again.best is not None and again.best.source == first.best.source
    assert any("read back from the store" in line for line in said)
