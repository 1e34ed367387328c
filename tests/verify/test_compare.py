"""The faster-beyond-noise rule, and that every place accepting a new best uses this one rule."""

from __future__ import annotations

import pytest

from kforge.engine import tune
from kforge.pipelines import cover, loop
from kforge.verify.compare import is_faster, median_standard_error
from kforge.verify.verdict import Outcome, TimingStats, Verdict


def timed(median_ms: float | None, iqr_ms: float = 0.0, repeats: int = 100,
          outcome: Outcome = Outcome.CORRECT) -> Verdict:
    stats = None if median_ms is None else TimingStats(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms,
                                                       max_ms=median_ms, iqr_ms=iqr_ms, repeats=repeats)
    return Verdict(verdict=outcome, reason="", platform="cpu", language="cpp", runtime_ms=median_ms, timing=stats)


def test_standard_error_of_a_median_shrinks_with_repeats() -> None:
    for repeats, error in ((100, 0.0929), (0, 0.929)):
        stats = timed(1.0, iqr_ms=1.0, repeats=repeats).timing
        assert stats is not None and median_standard_error(stats) == pytest.approx(error)


def test_faster_means_correct_timed_and_beyond_two_percent_and_the_noise() -> None:
    assert is_faster(timed(1.0, 0.01), timed(2.0, 0.01))
    assert not is_faster(timed(1.99), timed(2.0))  # under 2%
    assert not is_faster(timed(1.8, 2.0, 10), timed(2.0, 2.0, 10))  # inside the noise
    assert not is_faster(timed(1.0, outcome=Outcome.INCORRECT), timed(2.0))
    assert not is_faster(timed(None), timed(2.0)) and not is_faster(timed(1.0), timed(None))  # untimed


def test_the_loop_the_stages_and_the_tuner_share_the_rule() -> None:
    assert loop.is_faster is is_faster and cover.is_faster is is_faster and tune.is_faster is is_faster
