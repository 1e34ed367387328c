"""Whether one measured candidate is faster than another beyond noise: the one rule the KForge loop, the
staged pipeline's stages and the builtin engine's tuner all accept a new best by."""

from __future__ import annotations

import math

from kforge.verify.verdict import TimingStats, Verdict

MIN_IMPROVEMENT = 0.02


def median_standard_error(stats: TimingStats) -> float:
    """Standard error of a median, from the interquartile range: 1.2533 * sigma / sqrt(n), sigma ~ IQR / 1.349."""
    return 0.929 * stats.iqr_ms / math.sqrt(max(stats.repeats, 1))


def is_faster(new: Verdict, best: Verdict) -> bool:
    """Correct, and faster than the best beyond noise: the median must drop by more than both MIN_IMPROVEMENT
    (2%) of the best's median and twice the standard error of the difference of the two medians. An untimed
    verdict is never faster."""
    if not new.correct or new.timing is None or best.timing is None:
        return False
    noise = 2 * math.hypot(median_standard_error(new.timing), median_standard_error(best.timing))
    return best.timing.median_ms - new.timing.median_ms > max(MIN_IMPROVEMENT * best.timing.median_ms, noise)
