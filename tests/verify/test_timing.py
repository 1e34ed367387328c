"""Timing statistics and the cross-check of the worker's clock against the harness's."""

from __future__ import annotations

from kforge.platforms.cpu import CpuPlatform
from kforge.verify.timing import ClockReadings, TimingPlan, clock_disagreement, run_timing, summarize

MS = 1_000_000


def test_summarize() -> None:
    stats = summarize([4 * MS, 1 * MS, 2 * MS, 3 * MS, 5 * MS])
    assert stats.median_ms == 3.0 and stats.min_ms == 1.0 and stats.max_ms == 5.0 and stats.repeats == 5
    assert stats.iqr_ms > 0 and 0 < stats.relative_spread < 2


def test_honest_clocks_agree() -> None:
    readings = ClockReadings([MS] * 100, [MS + 2000] * 100, loop_ns=400 * MS, elapsed_ns=450 * MS)
    assert clock_disagreement(readings) is None


def test_tampered_timer_disagrees_with_the_second_clock() -> None:
    # The calls really took 10 ms each (second clock), but the timer says 1 microsecond.
    readings = ClockReadings([1000] * 100, [10 * MS] * 100, loop_ns=1300 * MS, elapsed_ns=1360 * MS)
    assert "tampered" in (clock_disagreement(readings) or "")


def test_a_pause_between_the_clocks_on_a_few_calls_is_not_tampering() -> None:
    # A busy machine paused the worker for 5 ms between the second clock's reading and the timer's, once in 20
    # calls of 0.1 ms (seen on a 2-core CI machine): the sums disagree 3.5-fold, the calls themselves do not.
    times = [100_000] * 20
    second = [102_000] * 19 + [5_350_000]
    assert clock_disagreement(ClockReadings(times, second, loop_ns=60 * MS, elapsed_ns=70 * MS)) is None


def test_a_timer_that_under_reports_a_share_of_the_calls_is_caught() -> None:
    # Under-reporting one call in three would pull the median down; it is more than pauses explain.
    times = [1000 if call % 3 == 0 else MS for call in range(30)]
    readings = ClockReadings(times, [MS + 2000] * 30, loop_ns=100 * MS, elapsed_ns=110 * MS)
    assert "10 of 30 calls disagree" in (clock_disagreement(readings) or "")


def test_a_hold_before_each_call_is_not_taken_for_a_tampered_timer() -> None:
    # A GPU call timed behind a 1.2 ms hold: the second clock sees the hold, the timer (rightly) does not.
    readings = ClockReadings([800_000] * 20, [2 * MS + 50_000] * 20, loop_ns=60 * MS, elapsed_ns=70 * MS,
                             lead_in_ns=[1_200_000] * 20)
    assert clock_disagreement(readings) is None
    assert "tampered" in (clock_disagreement(ClockReadings([800_000] * 20, [2 * MS + 50_000] * 20, loop_ns=60 * MS,
                                                           elapsed_ns=70 * MS)) or "")
    # The hold excuses only itself: a timer that reports nothing is still caught.
    readings = ClockReadings([1000] * 20, [2 * MS + 50_000] * 20, loop_ns=60 * MS, elapsed_ns=70 * MS,
                             lead_in_ns=[1_200_000] * 20)
    assert "tampered" in (clock_disagreement(readings) or "")


def test_stopped_clocks_are_caught_by_the_harness_clock() -> None:
    readings = ClockReadings([1000] * 100, [1100] * 100, loop_ns=1 * MS, elapsed_ns=5000 * MS)
    assert "stopped" in (clock_disagreement(readings) or "")


def test_impossible_readings() -> None:
    assert clock_disagreement(ClockReadings([MS] * 10, [MS] * 10, loop_ns=5 * MS, elapsed_ns=20 * MS))
    assert clock_disagreement(ClockReadings([MS] * 10, [MS] * 10, loop_ns=30 * MS, elapsed_ns=20 * MS))
    assert clock_disagreement(ClockReadings([MS] * 10, [MS] * 9, loop_ns=15 * MS, elapsed_ns=20 * MS))


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


def test_slow_input_refresh_cuts_the_number_of_calls_to_fit_the_wall_budget() -> None:
    import time

    import torch

    def make_inputs(seed: int) -> list[torch.Tensor]:
        time.sleep(0.02)  # a costly draw of fresh inputs
        return [torch.full((4,), float(seed))]

    plan = TimingPlan(seed=0, warmup_ms=0.0, rep_ms=1000.0, min_reps=5, max_reps=300, rotate=2, max_wall_ms=300.0)
    run = run_timing(lambda inputs: inputs[0] * 2, make_inputs, CpuPlatform(), plan, lambda out: out.clone())
    # The bound is on the number of calls (each draw sleeps 20 ms): a wall-clock bound here would fail whenever
    # the machine is busy.
    assert 5 <= len(run.times_ns) <= 20
    assert len(run.spot_outputs) == 2


def test_warm_up_stops_at_its_share_of_the_wall_budget() -> None:
    import time

    import torch

    draws = 0

    def make_inputs(seed: int) -> list[torch.Tensor]:
        nonlocal draws
        draws += 1
        time.sleep(0.02)  # drawing the inputs costs far more than the call
        return [torch.full((4,), float(seed))]

    # 100 ms of warm-up calls of a few microseconds each would be thousands of calls without the wall bound.
    plan = TimingPlan(seed=0, warmup_ms=100.0, rep_ms=0.01, min_reps=5, max_reps=5000, rotate=2, max_wall_ms=400.0)
    run = run_timing(lambda inputs: inputs[0] * 2, make_inputs, CpuPlatform(), plan, lambda out: out.clone())
    assert len(run.times_ns) == 5
    assert draws < 20  # rotate + priming + about 100 ms of warm-up draws + 5 reps (each draw sleeps 20 ms)


class _HostBoundEveryThird(CpuPlatform):
    """A platform that tells host-bound calls apart (as the CUDA platform does): every third one is."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def time_call(self, call):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().time_call(call)

    def host_bound(self) -> bool | None:
        return self.calls % 3 == 0


def test_host_bound_calls_are_counted_and_a_mostly_host_bound_candidate_is_told() -> None:
    import torch

    from kforge.verify.timing import host_bound_warning

    plan = TimingPlan(seed=1, warmup_ms=0.0, rep_ms=0.0, min_reps=9, max_reps=9, rotate=2)
    run = run_timing(lambda inputs: inputs[0] + 1, lambda seed: [torch.ones(4)], _HostBoundEveryThird(), plan,
                     lambda out: out)
    assert len(run.host_bound) == len(run.times_ns) == 9
    stats = summarize(run.times_ns, run.host_bound)
    assert stats.host_bound_share == sum(run.host_bound) / 9 and 0 < stats.host_bound_share < 0.5
    assert host_bound_warning(stats) is None
    mostly = summarize([1000] * 4, [True, True, True, False])
    warning = host_bound_warning(mostly)
    assert warning is not None and warning.startswith("75% of the timed calls")
    # A platform that cannot tell (the CPU) reports no share, and no warning.
    cpu = run_timing(lambda inputs: inputs[0] + 1, lambda seed: [torch.ones(4)], CpuPlatform(), plan, lambda out: out)
    assert cpu.host_bound == [] and summarize(cpu.times_ns, cpu.host_bound).host_bound_share is None
