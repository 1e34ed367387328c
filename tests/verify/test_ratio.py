"""The interval of a speedup from rounds taken in turn (verify/ratio.py), on synthetic call times."""

from __future__ import annotations

import random

from kforge.verify.ratio import format_speedup, includes_one, is_settled, speedup_interval, unsettled_warning


def _round(centre: float, spread: float, calls: int, draw: random.Random) -> list[int]:
    return [int(centre * (1.0 + draw.uniform(-spread, spread))) for _ in range(calls)]


def test_a_steady_ratio_gives_a_tight_interval_around_it() -> None:
    draw = random.Random(1)
    baseline = [_round(2_000_000, 0.05, 60, draw) for _ in range(3)]
    candidate = [_round(1_000_000, 0.05, 60, draw) for _ in range(3)]
    interval = speedup_interval(baseline, candidate)
    assert interval is not None
    low, high = interval
    assert low < 2.0 < high and is_settled(interval)


def test_drift_between_rounds_is_cancelled_by_the_pairing_but_not_when_it_hits_one_series() -> None:
    """The machine slowing down 3x in round two slows both series of that round alike: the ratio stays 2.
    The same slowdown on the candidate alone (what timing apart risks) leaves the ratio unknown."""
    draw = random.Random(2)
    factors = [1.0, 3.0, 1.2]
    paired_b = [_round(2e6 * f, 0.02, 40, draw) for f in factors]
    paired_c = [_round(1e6 * f, 0.02, 40, draw) for f in factors]
    paired = speedup_interval(paired_b, paired_c)
    alone_b = [_round(2e6, 0.02, 40, draw) for _ in factors]
    alone = speedup_interval(alone_b, paired_c)
    assert paired is not None and alone is not None
    assert paired[0] <= 2.0 <= paired[1] and is_settled(paired, 0.25)
    assert alone[1] / alone[0] > 2 * paired[1] / paired[0] and not is_settled(alone)


def test_only_rounds_both_series_completed_are_paired() -> None:
    assert speedup_interval([[5, 5, 5]], [[]]) is None
    assert speedup_interval([], [[1]]) is None
    interval = speedup_interval([[4] * 10, [4] * 10], [[2] * 10])
    assert interval == (2.0, 2.0)


def test_an_interval_holding_one_is_neither_faster_nor_slower_and_says_so() -> None:
    assert includes_one((0.9, 1.2)) and not includes_one((1.05, 1.3)) and not includes_one(None)
    assert format_speedup(1.9, (1.62, 2.31)) == "1.90x (1.62-2.31)"
    assert format_speedup(1.9) == "1.90x" and format_speedup(None) == "-"
    line = unsettled_warning("compile", 1.05, (0.9, 1.2), 8)
    assert "torch.compile is not settled: 1.05x (0.90-1.20) after 8 rounds" in line
    assert "not shown faster or slower" in line
    assert "take the interval" in unsettled_warning("eager", 1.5, (1.2, 1.8), 8)


def test_the_harness_gives_each_speedup_its_interval_and_adds_rounds_while_it_is_wide() -> None:
    """Real harness, CPU: eager timed in turn with the candidate. A tolerance no measurement meets makes the
    harness take every round it may, then say the speedup is not settled."""
    from kforge.verify.evaluate import evaluate
    from kforge.verify.timing import TimingSettings
    from tests.conftest import CANDIDATES, PROBLEMS, fast_options

    timing = TimingSettings(warmup_ms=10, rep_ms=30, min_reps=5, max_reps=30, rotate=2, rounds=2, max_rounds=4,
                            ratio_tolerance=1e-6)
    verdict = evaluate(PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py",
                       fast_options(baselines=("eager",), timing=timing))
    assert verdict.correct, verdict.reason
    interval = verdict.speedup_vs_eager_interval
    assert interval is not None and verdict.speedup_vs_eager is not None
    assert interval[0] <= verdict.speedup_vs_eager <= interval[1]
    assert verdict.timing_rounds == 4 and verdict.speedup_vs_compile_interval is None
    assert any("the speedup over eager is not settled" in warning for warning in verdict.warnings)
    # A tolerance any interval meets stops at the rounds asked for.
    loose = evaluate(PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py",
                     fast_options(baselines=("eager",), timing=timing.model_copy(update={"ratio_tolerance": 100.0})))
    assert loose.correct and loose.timing_rounds == 2
    assert not any("not settled" in warning for warning in loose.warnings)
