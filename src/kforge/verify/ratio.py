"""How sure a speedup is: an interval for the ratio of two series timed in rounds taken in turn.

A speedup is the ratio of two medians, the baseline's over the candidate's. Its uncertainty has two parts: the
spread of the calls within a round, and the machine changing between rounds (another job starting, a clock
stepping down), which moves both series of one round together when they are taken in turn. The interval here is
a paired, two-level bootstrap: draw rounds with replacement, the same rounds for both series (keeping the
pairing that interleaving bought), then calls with replacement within each drawn round, and take the ratio of
the pooled medians; the interval is the middle 95% of those ratios. With few rounds it is an optimistic figure
for the between-round part, which is why the harness adds rounds while it is wide (verify/evaluate.py).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

RESAMPLES = 400
LEVEL = 0.95
# A speedup is settled when its interval spans no more than this far either side of the middle: 1.9x within
# 1.81x-2.00x. Past it, the harness times more rounds, up to TimingSettings.max_rounds.
TOLERANCE = 0.05


def speedup_interval(baseline_rounds: Sequence[Sequence[int]], candidate_rounds: Sequence[Sequence[int]], *,
                     resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0) -> tuple[float, float] | None:
    """The `level` interval of median(baseline) / median(candidate) from per-round call times (any unit, the
    same for both); rounds are paired by position and only rounds both series completed count. None without a
    paired round holding calls of both."""
    pairs = [(list(b), list(c)) for b, c in zip(baseline_rounds, candidate_rounds, strict=False) if b and c]
    if not pairs:
        return None
    draw = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        chosen = draw.choices(pairs, k=len(pairs))
        baseline = [t for b, _c in chosen for t in draw.choices(b, k=len(b))]
        candidate = [t for _b, c in chosen for t in draw.choices(c, k=len(c))]
        low = statistics.median(candidate)
        if low > 0:
            ratios.append(statistics.median(baseline) / low)
    if not ratios:
        return None
    ratios.sort()
    tail = (1.0 - level) / 2
    return ratios[int(tail * (len(ratios) - 1))], ratios[round((1.0 - tail) * (len(ratios) - 1))]


def is_settled(interval: tuple[float, float] | None, tolerance: float = TOLERANCE) -> bool:
    """Whether an interval is tight enough to stop timing: high / low within (1 + tolerance) squared."""
    if interval is None:
        return True  # nothing more rounds could settle
    low, high = interval
    return low > 0 and high / low <= (1.0 + tolerance) ** 2


def includes_one(interval: Sequence[float] | None) -> bool:
    """Whether the interval allows no difference at all: a kernel whose speedup interval holds 1.0 is not shown
    faster (nor slower)."""
    return interval is not None and interval[0] <= 1.0 <= interval[1]


def format_speedup(value: float | None, interval: Sequence[float] | None = None) -> str:
    """`1.90x (1.62-2.31)`; `1.90x` without an interval; `-` without a value."""
    if value is None:
        return "-"
    if interval is None:
        return f"{value:.2f}x"
    return f"{value:.2f}x ({interval[0]:.2f}-{interval[1]:.2f})"


def unsettled_warning(baseline: str, value: float, interval: Sequence[float], rounds: int) -> str:
    """The line a verdict carries when a speedup's interval stayed wide after every round it was given."""
    label = "torch.compile" if baseline == "compile" else baseline
    verdict = ("so it is not shown faster or slower" if includes_one(interval) else
               "so take the interval, not the single figure")
    return (f"the speedup over {label} is not settled: {format_speedup(value, interval)} after {rounds} rounds "
            f"timed in turn, {verdict} (a busy machine widens it; time again on a quiet one)")
