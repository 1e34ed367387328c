"""The timing protocol (the loop runs inside the worker; the statistics are computed by the harness).

Each timed call gets inputs whose contents were drawn afresh from the problem's own `get_inputs` with a
new seed, copied into one of several rotating buffers, then the caches are flushed: caching by address or
by content gains nothing and no call starts with its data warm. Only the call itself is timed.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field

from kforge.platforms.base import Platform
from kforge.verify.verdict import TimingStats

# A second clock, captured before any candidate code is imported: around each timed call, and around the whole
# timing request in the worker.
second_clock = time.monotonic_ns


_WARMUP_WALL_SHARE = 0.25
_FULL_WARMUP_CALLS = 3


class TimingBudget(BaseModel):
    """How long to warm up and measure; durations are in milliseconds of timed calls. The one definition of
    these figures: the settings of a whole measurement and the plan of one round share it."""

    model_config = ConfigDict(frozen=True)

    warmup_ms: float = 100.0
    rep_ms: float = 1000.0
    min_reps: int = 10
    max_reps: int = 300
    rotate: int = 3
    # Wall-clock budget for the timed calls with their refresh and flush: large inputs drawn on the host can
    # cost far more than the call itself. The number of calls is cut to fit it (never below min_reps).
    max_wall_ms: float = 20_000.0


class TimingPlan(TimingBudget):
    """One round of timed calls, as the worker runs it: its budget, the first input seed, and where in the
    series the outputs kept for spot checks fall (fractions of the timed calls)."""

    seed: int
    spot_fractions: tuple[float, ...] = (0.5, 1.0)


class TimingSettings(TimingBudget):
    """How long to warm up and measure each of candidate, eager and torch.compile, over all rounds."""

    rounds: int = Field(3, ge=1, description=(
        "the timed calls of each series (candidate, eager, torch.compile) are split into this many rounds, "
        "taken in turn, so that a slow stretch of the machine weighs on every series alike"))
    max_rounds: int = Field(8, ge=1, description=(
        "where a candidate is timed beside its baselines, rounds are added up to this many while the interval of "
        "a speedup is wider than ratio_tolerance either side (each added round costs as much as one of `rounds`)"))
    ratio_tolerance: float = Field(0.05, gt=0, description=(
        "a speedup is settled once its 95% interval lies within this share either side of its middle"))

    def round_plan(self, index: int, seed: int, spot_fractions: tuple[float, ...]) -> TimingPlan:
        """Round `index`'s share of the budget (the whole warm-up in the first round only)."""
        share = 1.0 / self.rounds
        return TimingPlan(seed=seed, warmup_ms=self.warmup_ms * (1.0 if index == 0 else share),
                          rep_ms=self.rep_ms * share, min_reps=math.ceil(self.min_reps * share),
                          max_reps=math.ceil(self.max_reps * share), rotate=self.rotate,
                          max_wall_ms=self.max_wall_ms * share, spot_fractions=spot_fractions)


@dataclass
class TimingRun:
    """What the worker measured: per-call nanoseconds, the loop's length, and the outputs kept for checking."""

    times_ns: list[int] = field(default_factory=list)
    second_clock_ns: list[int] = field(default_factory=list)
    lead_in_ns: list[int] = field(default_factory=list)
    host_bound: list[bool] = field(default_factory=list)  # per call, where the platform tells (see Platform)
    loop_ns: int = 0
    first_seed: int = 0
    spot_outputs: dict[int, Any] = field(default_factory=dict)


def run_timing(call: Callable[[list[Any]], Any], make_inputs: Callable[[int], list[Any]], platform: Platform,
               plan: TimingPlan, keep: Callable[[Any], Any]) -> TimingRun:
    """Prime, warm up, then time `call` on freshly drawn inputs; `keep` copies an output for spot checks.

    Call number i (0-based) sees the inputs of seed `plan.seed + i`: the priming call, the first three warm-up
    calls and every timed call. Later warm-up calls run on the inputs already in place.
    """
    buffers = [make_inputs(plan.seed + slot) for slot in range(plan.rotate)]
    run = TimingRun(first_seed=plan.seed)
    index = 0

    def timed_call(fresh: bool = True) -> tuple[Any, int, int, int]:
        nonlocal index
        slot = buffers[index % plan.rotate]
        if fresh:
            _refresh(slot, make_inputs(plan.seed + index))
            platform.flush_cache()
        platform.synchronize()
        around_start = second_clock()
        result, elapsed = platform.time_call(lambda: call(slot))
        around = second_clock() - around_start
        index += 1
        return result, elapsed, around, platform.lead_in_ns()

    loop_start = second_clock()
    timed_call()  # priming: first-call costs (lazy init, compilation) stay out of every figure
    # Three calls under the full protocol tell what a timed call costs, alone and with its refresh and flush.
    measured_from = second_clock()
    warm = [timed_call()[1] for _ in range(_FULL_WARMUP_CALLS)]
    cycle = (second_clock() - measured_from) / len(warm)
    estimate = max(statistics.median(warm), 1)
    # The rest of the warm-up only runs the kernel, on inputs already in place: it brings the machine up to
    # speed, and fresh draws and flushes for calls that nobody measures cost as much again as the timed ones
    # (on a CPU, where both take milliseconds). It stops at its share of the wall budget too.
    warm_started = second_clock()
    warm_wall_ns = _WARMUP_WALL_SHARE * plan.max_wall_ms * 1e6
    while (sum(warm) < plan.warmup_ms * 1e6 and len(warm) < plan.max_reps
           and second_clock() - warm_started < warm_wall_ns):
        warm.append(timed_call(fresh=False)[1])
    reps = min(plan.max_reps, math.ceil(plan.rep_ms * 1e6 / estimate), int(plan.max_wall_ms * 1e6 / max(cycle, 1)))
    reps = max(plan.min_reps, reps)
    first_rep = index
    spots = {first_rep + min(reps - 1, max(0, math.ceil(fraction * reps) - 1)) for fraction in plan.spot_fractions}
    for _ in range(reps):
        current = index
        result, elapsed, around, lead_in = timed_call()
        run.times_ns.append(elapsed)
        run.second_clock_ns.append(around)
        run.lead_in_ns.append(lead_in)
        bound = platform.host_bound()
        if bound is not None:
            run.host_bound.append(bound)
        if current in spots:
            run.spot_outputs[current] = keep(result)
    run.loop_ns = second_clock() - loop_start
    return run


def _refresh(slot: list[Any], fresh: list[Any]) -> None:
    """Copy fresh contents into the rotating buffers in place, keeping their addresses."""
    for position, value in enumerate(fresh):
        target = slot[position]
        if isinstance(target, torch.Tensor) and isinstance(value, torch.Tensor) and target.shape == value.shape:
            target.copy_(value)
        else:
            slot[position] = value


def summarize(times_ns: list[int], host_bound: list[bool] | None = None) -> TimingStats:
    """Median, mean, extremes and interquartile range of per-call times, in milliseconds; with one host-bound
    flag per call, the share of calls whose figure was the host's issue time."""
    times = sorted(t / 1e6 for t in times_ns)
    quartiles = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    share = sum(host_bound) / len(host_bound) if host_bound and len(host_bound) == len(times_ns) else None
    return TimingStats(median_ms=statistics.median(times), mean_ms=statistics.fmean(times), min_ms=times[0],
                       max_ms=times[-1], iqr_ms=quartiles[2] - quartiles[0], repeats=len(times),
                       host_bound_share=share)


# At or above this share of host-bound calls, a verdict says that its runtime is the host's.
HOST_BOUND_WARNING_SHARE = 0.5


def host_bound_warning(stats: TimingStats) -> str | None:
    """A line for a candidate whose timed calls were mostly bound by the host issuing them, or None."""
    share = stats.host_bound_share
    if share is None or share < HOST_BOUND_WARNING_SHARE:
        return None
    return (f"{share:.0%} of the timed calls took longer to issue on the host (Python, launches) than to run "
            "on the device, so the runtime is mostly the host's: fewer launches per call (fusion, CUDA graphs) "
            "would gain more than faster kernels")


@dataclass(frozen=True)
class ClockReadings:
    """One timing request as seen by three clocks: the platform's timer per call, a second clock captured
    separately around each timed call and the whole request (`loop_ns`: drawing the inputs, the loop, handing
    the outputs over), both in the worker, and the harness's own wall time from sending the request to
    reading the answer."""

    times_ns: list[int]
    second_clock_ns: list[int]
    loop_ns: int
    elapsed_ns: int
    # Per call, device time the platform queued ahead of the call (a hold) that the second clock saw and
    # the timer rightly left out.
    lead_in_ns: list[int] = field(default_factory=list)


# A call's second-clock reading exceeds its timer reading by the timer's own overhead (a lambda; on a GPU,
# recording events and a device-wide synchronization, seen at 20-70 us a call on an H200): allow this much
# per call, or half the call, whichever is larger. A timer rebound to report nothing still fails.
_PER_CALL_SLACK_NS = 250_000
_HARNESS_SLACK_NS = 2_000_000_000
# A busy machine can pause the worker between the second clock's reading and the timer's, so a few calls may
# disagree honestly. A timer that under-reports this small a share of calls cannot move their median, the
# figure every verdict reports, by more than the calls' own spread; a larger share is tampering.
_DISAGREEING_CALL_SHARE = 0.1


def clock_disagreement(readings: ClockReadings) -> str | None:
    """Why the worker's timings cannot be believed, or None.

    A candidate that rebinds the timer makes the per-call readings disagree with the second clock; one that
    stops both leaves the loop far shorter than the harness saw it take. The harness's clock is out of the
    candidate's reach.
    """
    timed, around = sum(readings.times_ns), sum(readings.second_clock_ns)
    calls = len(readings.times_ns)
    if len(readings.second_clock_ns) != calls or around > readings.loop_ns or readings.loop_ns > readings.elapsed_ns:
        return "the worker's clocks contradict each other or the harness's clock"
    lead_in = readings.lead_in_ns if len(readings.lead_in_ns) == calls else [0] * calls
    disagreeing = sum(1 for reported, seen, held in zip(readings.times_ns, readings.second_clock_ns, lead_in,
                                                        strict=True)
                      if seen - held - reported > max(0.5 * (seen - held), _PER_CALL_SLACK_NS))
    if disagreeing > max(1, _DISAGREEING_CALL_SHARE * calls) or timed > around + _PER_CALL_SLACK_NS * calls:
        return (f"the timer reports {timed / 1e6:.3f} ms of calls where a second clock saw {around / 1e6:.3f} ms "
                f"({disagreeing} of {calls} calls disagree): the timer was tampered with")
    if readings.elapsed_ns - readings.loop_ns > max(_HARNESS_SLACK_NS, 0.5 * readings.elapsed_ns):
        return (f"the worker reports a {readings.loop_ns / 1e6:.1f} ms timing loop, but the harness waited "
                f"{readings.elapsed_ns / 1e6:.1f} ms for it: the worker's clocks were stopped")
    return None
