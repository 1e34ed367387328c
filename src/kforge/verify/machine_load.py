"""Whether the machine was busy with other work while kforge timed: a line to show beside figures it weakens.

The load average counts kforge's own workers (a timed CPU kernel keeps every core it is given busy), so it
cannot tell a busy machine from a busy measurement. This watch counts instead the CPU time the whole machine
spent over a stretch, less what this process and its descendants (the workers) spent, plus time a hypervisor
took from the machine's virtual CPUs (steal): what other work cost the measurement.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil

# Busy when other work used more than this share of the machine's cores over the stretch (at least half a core),
# or a hypervisor took more than STEAL_SHARE of its CPU time.
OTHERS_SHARE = 0.25
MIN_OTHERS_CORES = 0.5
STEAL_SHARE = 0.05


@dataclass(frozen=True)
class LoadReading:
    """What other work did while a stretch of timing ran."""

    seconds: float
    cores: int
    others_cores: float  # the average number of cores other processes kept busy
    steal_share: float  # share of the machine's CPU time taken by a hypervisor

    @property
    def busy(self) -> bool:
        return (self.others_cores > max(MIN_OTHERS_CORES, OTHERS_SHARE * self.cores)
                or self.steal_share > STEAL_SHARE)

    def line(self) -> str | None:
        """One line saying the machine was busy and how, or None when it was not."""
        if not self.busy:
            return None
        parts = []
        if self.others_cores > max(MIN_OTHERS_CORES, OTHERS_SHARE * self.cores):
            parts.append(f"other processes kept {self.others_cores:.1f} of its {self.cores} cores busy")
        if self.steal_share > STEAL_SHARE:
            parts.append(f"the hypervisor took {self.steal_share:.0%} of its CPU time")
        return (f"the machine was busy while timing ({'; '.join(parts)}): figures taken under load can be off by "
                "more than their intervals; time again on a quiet machine to settle them")


class LoadWatch:
    """Counts other work's CPU time from `start()` to `reading()`."""

    def __init__(self) -> None:
        self._started: tuple[float, float, float, float] | None = None

    def start(self) -> LoadWatch:
        self._started = _snapshot()
        return self

    def reading(self) -> LoadReading | None:
        """Other work's share since `start()`; None where the counts cannot be read or no time passed."""
        if self._started is None:
            return None
        ended = _snapshot()
        wall, busy, ours, steal = (after - before for after, before in zip(ended, self._started, strict=True))
        cores = psutil.cpu_count() or os.cpu_count() or 1
        if wall <= 0:
            return None
        others = max(0.0, busy - ours) / wall
        total = wall * cores
        return LoadReading(seconds=wall, cores=cores, others_cores=others, steal_share=max(0.0, steal) / total)


def _snapshot() -> tuple[float, float, float, float]:
    """(wall seconds, the machine's busy CPU seconds, this process tree's CPU seconds, steal seconds)."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    steal = getattr(times, "steal", 0.0)
    busy = sum(times) - idle - steal - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    return time.monotonic(), busy, _tree_cpu_seconds(), steal


def _tree_cpu_seconds() -> float:
    """CPU seconds this process and its live descendants have used, those of reaped children included."""
    me = psutil.Process()
    try:
        descendants = me.children(recursive=True)
    except psutil.Error:
        descendants = []
    # A live process is not in its parent's counts of reaped children, so each is counted once.
    return sum(_cpu_seconds(process) for process in [me, *descendants])


def _cpu_seconds(process: psutil.Process) -> float:
    """A process's own CPU seconds and those of the children it has reaped."""
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system + times.children_user + times.children_system
