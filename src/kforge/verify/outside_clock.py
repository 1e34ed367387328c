"""The harness's own clock on a candidate: batches of calls timed end to end from outside the worker.

The per-call figures a verdict reports are measured inside the worker, where the candidate runs too; a candidate
that reaches the worker's timing code (C++ can rewrite any function of the interpreter) could scale every clock
there alike, and no comparison made inside the worker would notice. So after each of its timing rounds the
harness also times, on its own clock, a batch of calls the worker makes back to back (inputs drawn beforehand,
one device-wide wait at the end), subtracts what a batch of no calls costs the same way, and checks two outputs
of the batch, the last and one it picks after the batch returned. The batch runs warm and without the cache
flushes of the timed calls, so an honest kernel's batch is no slower a call than its reported median; a worker
timer that reports far less than the batch took is rejected (`dynamic.clock`).

What this does not prove: that every call of the batch computed its answer. A candidate that learns the batch's
length from inside the worker could skip calls and compute late the one the harness picks; checking every
output of a batch is the next step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# How long a batch should last on the candidate's own figure: long against the request's own cost (tens of
# microseconds) and the machine's hiccups, short against the evaluation.
_TARGET_NS = 30_000_000
_MAX_CALLS = 256
# What the staged inputs and held outputs of one batch may take: a batch needs no more than a few calls of a
# large problem to last long enough.
_MAX_BYTES = 1 << 30
# A batch may take this much longer a call than the worker's median before the two are called contradictory:
# it runs warm and unflushed, so an honest kernel's batch is faster, not slower; the margin is for a machine
# that was busier during the batch than during the timed calls (the least of the rounds' batches counts).
TOLERANCE = 1.5
# The jitter of one request's own cost, spread over the batch's calls.
_REQUEST_JITTER_NS = 200_000


def batch_calls(claimed_ns: float, bytes_per_call: int, memory_bytes: int | None = None) -> int:
    """How many calls a batch makes: enough to last about `_TARGET_NS` at the worker's own figure (which the
    candidate may have falsified: a figure too small only buys a longer batch, capped), as far as the inputs
    and outputs of that many calls fit in memory; at least one."""
    wanted = math.ceil(_TARGET_NS / max(claimed_ns, 1.0))
    room = min(_MAX_BYTES, memory_bytes // 4 if memory_bytes else _MAX_BYTES)
    fits = room // max(bytes_per_call, 1)
    return max(1, min(wanted, _MAX_CALLS, fits))


@dataclass(frozen=True)
class BatchReading:
    """One batch as the harness's clock saw it: the request with `calls` calls, and the least of the requests
    with none around it."""

    calls: int
    batch_ns: int
    empty_ns: int

    @property
    def per_call_ns(self) -> float:
        return max(0, self.batch_ns - self.empty_ns - _REQUEST_JITTER_NS) / self.calls


def outside_disagreement(claimed_median_ns: float, readings: list[BatchReading]) -> str | None:
    """Why the worker's timings contradict the harness's clock, or None. The quickest batch counts."""
    if not readings:
        return None
    quickest = min(readings, key=lambda reading: reading.per_call_ns)
    if quickest.per_call_ns <= TOLERANCE * claimed_median_ns:
        return None
    return (f"{quickest.calls} calls in a row took {quickest.per_call_ns / 1e6:.4g} ms each on the harness's own "
            f"clock (the quickest of {len(readings)} batches), but the worker's timer reported a median of "
            f"{claimed_median_ns / 1e6:.4g} ms a call: the worker's clocks do not measure the calls")
