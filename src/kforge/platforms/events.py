"""Timing by device events, for GPUs that torch reaches through a backend of its own (Apple MPS, Intel XPU).

A subclass names its event type, how to record one, how to wait for the whole device and how large a buffer
evicts its caches; this class does the rest the way the CUDA platform does, less the hold (a CUDA-only
kernel): events on the caller's stream around the call, the device idle before and after, the cost of a call
the larger of the events' span (which, with no hold, includes the host's time to issue the call) and that
issue time, and an audit that compares each span with the host clock up to a device-wide wait, so work that
escaped the timed stream shows.
"""

from __future__ import annotations

import statistics
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import torch

from kforge.platforms.base import Platform, TimingDoubt
from kforge.platforms.gpu import audit_records, error_text, marked_line

# Captured when the worker imports this module, before any candidate code exists in the process.
_clock = time.perf_counter_ns
_empty = torch.empty

_CALIBRATION_CALLS = 25
_KEPT_CLOCK_PAIRS = 4096
POISON_BYTE = 0xFF


class EventTimedPlatform(Platform):
    """A GPU timed by its own events; subclasses supply the device-specific primitives."""

    asynchronous = True
    # GPU drivers reserve far more virtual address space than they use; RLIMIT_AS would kill workers.
    limit_address_space = False
    #: lower-case fragments of driver errors after which the device is unusable for the rest of the process
    sticky_errors: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._flush_buffer: torch.Tensor | None = None
        self._flush_round = 0
        self._events: tuple[Any, Any] | None = None
        self._host_bound = False
        # (reported ns, event span ns, host ns) of the latest timed calls, for audit_timing.
        self._clock_records: list[tuple[int, int, int]] = []

    @abstractmethod
    def new_event(self) -> Any:
        """An event that records time."""

    @abstractmethod
    def record(self, event: Any) -> None:
        """Record `event` on the stream the call will be issued to."""

    @abstractmethod
    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two recorded events (both finished)."""

    @abstractmethod
    def flush_bytes(self) -> int:
        """Bytes to write between timed calls so that none of the inputs stays in a cache."""

    def free_bytes(self) -> int | None:
        """Device memory still free, where the backend reports it."""
        return None

    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        result, reported_ns, span_ns, host_ns = self._measure(call)
        self._clock_records.append((reported_ns, span_ns, host_ns))
        del self._clock_records[:-_KEPT_CLOCK_PAIRS]
        return result, reported_ns

    def _measure(self, call: Callable[[], Any]) -> tuple[Any, int, int, int]:
        if self._events is None:
            self._events = (self.new_event(), self.new_event())
        start, end = self._events
        host_start = _clock()
        self.record(start)
        issue_start = _clock()
        result = call()
        issue_ns = _clock() - issue_start
        self.record(end)
        self.synchronize()
        host_ns = _clock() - host_start
        span_ns = round(self.elapsed_ms(start, end) * 1e6)
        # With no hold in front, an idle device records the start event at once and the span holds the host's
        # time to issue the call too: the call is the host's when issuing took most of it.
        self._host_bound = 2 * issue_ns > span_ns
        return result, max(span_ns, issue_ns), span_ns, host_ns

    def host_bound(self) -> bool | None:
        return self._host_bound

    def flush_cache(self) -> None:
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_bytes(), dtype=torch.uint8, device=self.device)
        self._flush_round = (self._flush_round + 1) % 251
        self._flush_buffer.fill_(self._flush_round)

    def audit_timing(self, times_ns: list[int]) -> TimingDoubt | None:
        return audit_records(self._clock_records, times_ns, self.host_overhead_ns)

    def host_overhead_ns(self) -> float:
        """Host time minus the events' span for an empty call: launch and synchronization latency alone."""
        self.synchronize()
        samples = []
        for _ in range(_CALIBRATION_CALLS):
            _, _, span_ns, host_ns = self._measure(lambda: None)
            samples.append(host_ns - span_ns)
        return statistics.median(samples)

    def poison_free_memory(self, reserve_bytes: int) -> None:
        """Fill a fresh reserve with 0xFF bytes and free it, so the allocator hands poisoned memory out next.

        Coarser than the CUDA platform's (which poisons every cached free block): these backends expose no
        snapshot of their allocator's cache, so only memory the reserve took is covered.
        """
        free = self.free_bytes()
        size = min(reserve_bytes, free // 4) if free is not None else reserve_bytes
        if size <= 0:
            return
        self.synchronize()
        reserve = _empty(size, dtype=torch.uint8, device=self.device)
        reserve.fill_(POISON_BYTE)
        self.synchronize()
        del reserve

    def device_lost(self, error: BaseException) -> str | None:
        line = marked_line(error_text(error), self.sticky_errors)
        if line:
            return line
        try:  # an error that broke the device makes every later call fail, a plain synchronize included
            self.synchronize()
        except Exception as probe:
            return error_text(probe).splitlines()[0][:300]
        return None
