"""Timing statistics and the cross-check of the worker's clock against the harness's."""

from __future__ import annotations

from kforge.platforms.cpu import CpuPlatform
from kforge.verify.timing import ClockReadings, TimingPlan, clock_disagreement, run_timing, summarize

MS = 1_000_000


def test_summarize() -> None:
    stats = summarize([4 * MS, 1 * MS, 2 * MS, 3 * MS, 5 * MS])
    assert stats.median_ms == 3.0 and stats.min_ms == 1.0 and stats.max_ms == 5.0 and stats.repeats == 5
    assert stats.iqr_ms > 0 and 0 < stats.relative_spread < 2


def test_honest_clock_agrees() -> None:
    reference = ClockReadings([MS] * 100, loop_ns=400 * MS, elapsed_ns=450 * MS)  # 3.5 ms overhead a call
    candidate = ClockReadings([MS // 2] * 100, loop_ns=360 * MS, elapsed_ns=410 * MS)
    assert clock_disagreement(candidate, reference) is None


def test_frozen_timer_is_caught() -> None:
    reference = ClockReadings([MS] * 100, loop_ns=400 * MS, elapsed_ns=450 * MS)
    # The calls really took 10 ms each, but the worker's timer says 1 microsecond.
    candidate = ClockReadings([1000] * 100, loop_ns=1300 * MS, elapsed_ns=1360 * MS)
    assert "hidden from the timer" in (clock_disagreement(candidate, reference) or "")


def test_impossible_readings_are_caught_without_calibration() -> None:
    assert clock_disagreement(ClockReadings([MS] * 10, loop_ns=5 * MS, elapsed_ns=20 * MS), None)
    assert clock_disagreement(ClockReadings([MS] * 10, loop_ns=30 * MS, elapsed_ns=20 * MS), None)


def test_run_timing_refreshes_inputs_and_keeps_spot_outputs() -> None:
    import torch

    seen: list[float] = []

    def make_inputs(seed: int) -> list[torch.Tensor]:
        return [torch.full((4,), float(seed))]

    def call(inputs: list[torch.Tensor]) -> torch.Tensor:
        seen.append(float(inputs[0][0]))
        return inputs[0] * 2

    plan = TimingPlan(seed=100, warmup_ms=0.0, rep_ms=0.0, min_reps=6, max_reps=6, rotate=2, spot_fractions=(0.5, 1.0))
    run = run_timing(call, make_inputs, CpuPlatform(), plan, lambda out: out.clone())
    assert len(run.times_ns) == 6
    assert seen == [100.0 + i for i in range(len(seen))], "every call must see the contents of its own seed"
    assert sorted(run.spot_outputs) == [6, 9]  # priming + 3 warm-up calls, then reps 3 and 6 of 6
    assert float(run.spot_outputs[9][0]) == 2 * 109
