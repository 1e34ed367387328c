"""Admission onto a GPU that several slots share (`kforge suite --workers N` above the number of GPUs): a problem
starts on its slot's GPU only when its estimated memory (suite/memory.py) fits, beside the estimates of the problems
running there, within SAFETY of the GPU's memory. Otherwise its slot waits until a problem there finishes. Slots
that share no GPU (one per GPU, the CPU's, Ray's) are not admitted by memory at all.

Problems waiting for one GPU start in the order they came: a large one is not overtaken for ever by smaller ones
that would fit sooner. A problem that fits no GPU even alone, or whose memory could not be estimated, waits until
its GPU is empty and has it to itself while it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from kforge.suite.memory import GB, Estimate, estimate

# The share of a GPU's memory the estimates may fill: the rest is for what they leave out (each process's device
# context, Triton's autotuning, the allocator's rounding; suite/memory.py).
SAFETY = 0.85


class GpuMemory:
    """The GPUs slots share, each with the bytes its problems' estimates may take (`total` times `safety`), and
    what the problems running on each are estimated to hold. Thread-safe: each slot's thread asks for itself."""

    def __init__(self, total: Mapping[str, int], estimator: Callable[[Path], Estimate] = estimate,
                 safety: float = SAFETY) -> None:
        self.usable = {gpu: int(size * safety) for gpu, size in total.items()}
        self._estimator = estimator
        self._estimates: dict[Path, Estimate] = {}
        self._estimating = threading.Lock()
        self._changed = threading.Condition()
        self._used = dict.fromkeys(total, 0)
        self._queues: dict[str, list[object]] = {gpu: [] for gpu in total}

    def shares(self, gpu: str | None) -> bool:
        """Whether problems on `gpu` are admitted by memory."""
        return gpu in self.usable

    def estimate(self, path: Path) -> Estimate:
        """The problem's estimate, made once (a problem run again keeps it)."""
        with self._estimating:  # one at a time: problems' code is not written for threads, and seeding is global
            if path not in self._estimates:
                self._estimates[path] = self._estimator(path)
            return self._estimates[path]

    @contextmanager
    def held(self, gpu: str, estimate: Estimate, say: Callable[[str], None]) -> Iterator[Estimate]:
        """Wait until the problem `estimate` is for fits on `gpu`, then count it there until the block ends. `say`
        gets one line when it must wait, and one when it runs alone (too large to share, or not estimated)."""
        usable = self.usable[gpu]
        need = usable if estimate.bytes is None else estimate.bytes
        if estimate.bytes is None:
            say(f"no memory estimate ({estimate.reason}): it runs alone on gpu {gpu}")
        elif need > usable:
            say(f"needs {gb(need)}, more than gpu {gpu}'s {gb(usable)} to share: it runs alone there")
        with self._changed:
            ticket = object()
            queue = self._queues[gpu]
            queue.append(ticket)
            waited = False
            while not (queue[0] is ticket and self._fits(gpu, need)):
                if not waited:
                    ahead = queue.index(ticket)
                    say(f"waiting for memory on gpu {gpu}: needs {gb(need)}, {gb(self._used[gpu])} of {gb(usable)} "
                        f"in use" + (f", {ahead} waiting before it" if ahead else ""))
                    waited = True
                self._changed.wait()
            queue.pop(0)
            self._used[gpu] += need
            self._changed.notify_all()  # the next in line may fit beside it
        try:
            yield estimate
        finally:
            with self._changed:
                self._used[gpu] -= need
                self._changed.notify_all()

    def _fits(self, gpu: str, need: int) -> bool:
        used = self._used[gpu]
        return used == 0 or used + need <= self.usable[gpu]


def gb(size: int) -> str:
    return f"{size / GB:.0f} GB" if size >= 10 * GB else f"{size / GB:.1f} GB"
