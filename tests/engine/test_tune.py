"""The autotuner: which variants it judges, which it keeps, and when it stops.

Most tests use a fake evaluator whose synthetic verdicts come from a table of medians, so the search is
checked exactly; one test runs the real harness on two Triton candidates in the CPU interpreter.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from kforge.engine.tune import TuneSettings, Variant, tune
from kforge.verify.compare import is_faster
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome, TimingStats, Verdict
from tests.conftest import CANDIDATES, PROBLEMS, fast_options


def verdict(median_ms: float | None, outcome: Outcome = Outcome.CORRECT, iqr_ms: float = 0.0) -> Verdict:
    timing = None if median_ms is None else TimingStats(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms,
                                                        max_ms=median_ms, iqr_ms=iqr_ms, repeats=100)
    return Verdict(verdict=outcome, reason="synthetic", platform="cpu", language="triton",
                   runtime_ms=median_ms, timing=timing)


class FakeHarness:
    """Judges a source by looking its verdict up; remembers what it was asked."""

    def __init__(self, verdicts: dict[str, Verdict], seconds: float = 1.0) -> None:
        self.verdicts = verdicts
        self.asked: list[str] = []
        self.now = 0.0
        self.seconds = seconds

    def clock(self) -> float:
        return self.now

    def __call__(self, source: str) -> Verdict:
        self.asked.append(source)
        self.now += self.seconds
        return self.verdicts[source]


def grid_variants(cost: Callable[[int, int], float]) -> tuple[list[Variant], dict[str, Verdict]]:
    """A 5 x 4 grid of (BLOCK, num_warps) whose median is cost(block, warps)."""
    variants, verdicts = [], {}
    for block, warps in itertools.product([32, 64, 128, 256, 512], [1, 2, 4, 8]):
        source = f"kernel BLOCK={block} warps={warps}"
        variants.append(Variant({"BLOCK": block, "num_warps": warps}, source))
        verdicts[source] = verdict(cost(block, warps))
    return variants, verdicts


def test_few_variants_are_all_judged_and_the_faster_wins() -> None:
    harness = FakeHarness({"slow": verdict(2.0), "fast": verdict(1.0)})
    result = tune([({"BLOCK": 64}, "slow"), ({"BLOCK": 128}, "fast")], harness, clock=harness.clock)
    assert harness.asked == ["slow", "fast"]
    assert result.best is not None and result.best_config == {"BLOCK": 128}
    assert [trial.variant.source for trial in result.ranked] == ["fast", "slow"]
    assert result.stop_reason == "judged every variant"


def test_incorrect_variants_are_skipped_even_when_fastest() -> None:
    harness = FakeHarness({"wrong": verdict(0.1, Outcome.INCORRECT), "crash": verdict(None, Outcome.CRASHED),
                           "right": verdict(3.0)})
    result = tune([({"v": 1}, "wrong"), ({"v": 2}, "crash"), ({"v": 3}, "right")], harness, clock=harness.clock)
    assert result.best is not None and result.best.variant.source == "right"
    assert [trial.variant.source for trial in result.ranked] == ["right"]
    assert len(result.trials) == 3


def test_a_gain_within_noise_does_not_replace_the_default() -> None:
    noisy_fast = verdict(0.99, iqr_ms=0.5)
    assert not is_faster(noisy_fast, verdict(1.0, iqr_ms=0.5))
    harness = FakeHarness({"default": verdict(1.0, iqr_ms=0.5), "other": noisy_fast})
    result = tune([({"v": 0}, "default"), ({"v": 1}, "other")], harness, clock=harness.clock)
    assert result.best is not None and result.best.variant.source == "default"
    # The ranking still orders by median; only the choice of the best applies the noise rule.
    assert result.ranked[0].variant.source == "other"


def test_untimed_verdicts_keep_the_first_correct_variant() -> None:
    harness = FakeHarness({"a": verdict(None, Outcome.INCORRECT), "b": verdict(None), "c": verdict(None)})
    result = tune([({"v": 0}, "a"), ({"v": 1}, "b"), ({"v": 2}, "c")], harness, clock=harness.clock)
    assert result.best is not None and result.best.variant.source == "b"


def test_identical_sources_are_judged_once() -> None:
    harness = FakeHarness({"same": verdict(1.0)})
    result = tune([({"BLOCK": 64}, "same"), ({"BLOCK": 128}, "same")], harness, clock=harness.clock)
    assert harness.asked == ["same"] and len(result.trials) == 1


def test_large_space_climbs_from_the_coarse_grid_to_the_optimum() -> None:
    # A bowl with its minimum at (BLOCK=128, warps=2), off the coarse grid's marks for warps.
    blocks, warps_levels = [32, 64, 128, 256, 512], [1, 2, 4, 8]

    def cost(block: int, warps: int) -> float:
        return 1.0 + abs(blocks.index(block) - 2) + abs(warps_levels.index(warps) - 1)

    variants, verdicts = grid_variants(cost)
    harness = FakeHarness(verdicts)
    result = tune(variants, harness, TuneSettings(exhaustive_up_to=8, coarse_size=6), clock=harness.clock)
    assert result.best_config == {"BLOCK": 128, "num_warps": 2}
    assert len(harness.asked) < len(variants), "the search should not need every variant"
    assert harness.asked[0] == variants[0].source, "the default is judged first"
    assert result.stop_reason == "no neighbour of the best is faster"


def test_the_wall_budget_stops_the_search_but_the_first_variant_always_runs() -> None:
    variants, verdicts = grid_variants(lambda block, warps: float(block * warps))
    harness = FakeHarness(verdicts, seconds=10.0)
    result = tune(variants, harness, TuneSettings(budget_s=35.0), clock=harness.clock)
    assert len(harness.asked) == 3, "three 10 s evaluations fit in 35 s, a fourth would not"
    assert "budget" in result.stop_reason
    starved = FakeHarness(verdicts, seconds=10.0)
    result = tune(variants, starved, TuneSettings(budget_s=0.0), clock=starved.clock)
    assert len(starved.asked) == 1 and result.best is not None


def test_no_variants_gives_an_empty_result() -> None:
    result = tune([], FakeHarness({}))
    assert result.best is None and result.trials == [] and result.stop_reason == "no variants to judge"


def test_tune_through_the_real_harness_keeps_the_correct_triton_candidate() -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    problem = PROBLEMS / "leaky_scale.py"
    folder = CANDIDATES / "leaky_scale"
    sources = {name: (folder / f"{name}.py").read_text() for name in ("triton_wrong_slope", "triton_honest")}

    def judge(source: str) -> Verdict:
        name = next(key for key, text in sources.items() if text == source)
        return evaluate(problem, folder / f"{name}.py", fast_options(language="triton"))

    variants = [({"slope": "wrong"}, sources["triton_wrong_slope"]), ({"slope": "honest"}, sources["triton_honest"])]
    result = tune(variants, judge)
    assert [trial.verdict.verdict for trial in result.trials] == ["incorrect", "correct"]
    assert result.best_config == {"slope": "honest"}
