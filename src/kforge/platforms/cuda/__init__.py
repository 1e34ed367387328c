"""The CUDA platform: CUDA C++ (load_inline) and Triton candidates on an NVIDIA GPU.

Timing uses device events on the caller's stream around each call, with the device idle before and after
and the L2 flushed in between. While the host issues the call, a hold (`hold.py`) keeps every
multiprocessor busy, so the events measure the device's own time for the call; the host's time to issue it
is measured too, and a call costs the larger of the two (what it costs when calls follow one another).
Each call is also timed by the host clock up to a device-wide synchronize; `audit_timing` compares that
with the events, so work pushed onto another stream cannot hide from them. The judgement itself (and
every other decision that needs no GPU) is in `device.py`.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import deque
from collections.abc import Callable
from importlib import metadata
from typing import Any, ClassVar

import torch

from kforge.platforms.base import Platform, TimingDoubt
from kforge.platforms.cuda.device import arch_list, context_error_line, flush_bytes, l2_cache_bytes
from kforge.platforms.cuda.hold import hold_available, hold_device
from kforge.platforms.cuda.poison import poison_free_memory
from kforge.platforms.gpu import audit_records, error_text

# Captured when the worker imports this module, before any candidate code exists in the process: a
# candidate that patches torch.cuda.Event or torch.cuda.synchronize later does not reach these.
_clock = time.perf_counter_ns
_synchronize = torch.cuda.synchronize
_current_stream = torch.cuda.current_stream
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed_time = torch.cuda.Event.elapsed_time
_hold = hold_device if hold_available() else None

_CALIBRATION_CALLS = 25
_KEPT_CLOCK_PAIRS = 4096
# The hold before each call lasts 1.5 times the longest of the latest issue times, plus a margin: long
# enough that the device is still held when the host has issued the call (if not, the device waits for the
# host inside the timed window, which costs the candidate and hides nothing).
_HOLD_FIRST_NS = 200_000
_HOLD_MARGIN_NS = 30_000
_HOLD_MAX_NS = 20_000_000
_ISSUES_KEPT = 8


class CudaPlatform(Platform):
    name = "cuda"
    languages = ("cuda", "triton")
    title = "an NVIDIA GPU"
    language_titles: ClassVar[dict[str, str]] = {"cuda": "CUDA C++", "triton": "Triton"}
    # The CUDA driver reserves far more virtual address space than it uses; RLIMIT_AS would kill workers.
    limit_address_space = False
    asynchronous = True
    visible_devices_variable = "CUDA_VISIBLE_DEVICES"
    #: whether a hold fills the device before each timed call (its kernel reads an NVIDIA-only timer)
    uses_hold: ClassVar[bool] = True

    def __init__(self, index: int = 0) -> None:
        self._index = index
        # float32 means float32 here: TF32 (cuDNN's default for convolutions) would give the reference an
        # error of about 1e-3, more than float32's tolerance, and fail exact kernels. Set in the harness
        # and in every worker alike, so baselines and vendor calls run the same arithmetic.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        self._flush_buffer: torch.Tensor | None = None
        self._flush_round = 0
        self._events: tuple[Any, Any, Any] | None = None
        self._issues_ns: deque[int] = deque(maxlen=_ISSUES_KEPT)
        self._last_hold_ns = 0
        self._host_bound = False
        # (reported ns, window ns, host ns) of the latest timed calls, for audit_timing.
        self._clock_records: list[tuple[int, int, int]] = []

    def prepare_run(self) -> None:
        """Compile the hold: Triton builds it at its first launch, with ptxas, which a candidate's run phase
        refuses to start."""
        if _hold is not None and self.uses_hold:
            _hold(self._index, 0)
            self.synchronize()

    @classmethod
    def device_count(cls) -> int:
        return torch.cuda.device_count() if cls.is_available() else 0

    @classmethod
    def device_memory(cls, index: int) -> int | None:
        # The device's properties, not torch.cuda.mem_get_info: that would create a context on the GPU (about
        # 0.5 GB) in the suite's process, held for the whole suite.
        return int(torch.cuda.get_device_properties(index).total_memory) if cls.is_available() else None

    @classmethod
    def is_available(cls) -> bool:
        """An NVIDIA GPU: torch built for ROCm answers torch.cuda too, and is the rocm platform's."""
        return torch.cuda.is_available() and torch.version.hip is None

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", self._index)

    def synchronize(self) -> None:
        """Wait for every stream on the device, not only the current one."""
        _synchronize(self._index)

    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        result, reported_ns, window_ns, host_ns = self._measure(call)
        self._clock_records.append((reported_ns, window_ns, host_ns))
        del self._clock_records[:-_KEPT_CLOCK_PAIRS]
        return result, reported_ns

    def _measure(self, call: Callable[[], Any]) -> tuple[Any, int, int, int]:
        """One call: (result, what it costs, the events' whole window, the host clock until the device is idle).

        The cost is the larger of the device's time for the call (events behind the hold) and the host's
        time to issue it. The window runs from an event recorded before the hold to the end event, so it
        spans the same stretch as the host clock, which `audit_timing` compares it with.
        """
        if self._events is None:
            self._events = (_Event(enable_timing=True), _Event(enable_timing=True), _Event(enable_timing=True))
        before, start, end = self._events
        # The stream is taken before the call, so a candidate that switches streams is still timed on ours.
        stream = _current_stream(self._index)
        host_start = _clock()
        _record(before, stream)
        hold = _hold if self.uses_hold else None
        self._last_hold_ns = self._hold_ns() if hold is not None else 0
        if hold is not None:
            hold(self._index, self._last_hold_ns)
        _record(start, stream)
        issue_start = _clock()
        result = call()
        issue_ns = _clock() - issue_start
        _record(end, stream)
        _synchronize(self._index)
        host_ns = _clock() - host_start
        self._issues_ns.append(issue_ns)
        device_ns = round(_elapsed_time(start, end) * 1e6)
        # Behind a hold the events see the device alone; without one (ROCm) they also see the host issue the call,
        # which is then the host's when issuing took most of it.
        self._host_bound = issue_ns > device_ns if hold is not None else 2 * issue_ns > device_ns
        window_ns = round(_elapsed_time(before, end) * 1e6)
        return result, max(device_ns, issue_ns), window_ns, host_ns

    def lead_in_ns(self) -> int:
        return self._last_hold_ns

    def host_bound(self) -> bool | None:
        return self._host_bound

    def _hold_ns(self) -> int:
        if not self._issues_ns:
            return _HOLD_FIRST_NS
        return min(_HOLD_MAX_NS, round(1.5 * max(self._issues_ns)) + _HOLD_MARGIN_NS)

    def flush_size(self) -> int:
        """Bytes written between timed calls: twice the L2."""
        return flush_bytes(l2_cache_bytes(torch.cuda.get_device_properties(self._index)))

    def flush_cache(self) -> None:
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_size(), dtype=torch.uint8, device=self.device)
        self._flush_round = (self._flush_round + 1) % 251
        self._flush_buffer.fill_(self._flush_round)

    def audit_timing(self, times_ns: list[int]) -> TimingDoubt | None:
        return audit_records(self._clock_records, times_ns, self.host_overhead_ns)

    def clock_records(self) -> list[tuple[int, int, int]]:
        """(reported ns, event window ns, host ns) of the latest timed calls, oldest first: what audit_timing
        judges."""
        return list(self._clock_records)

    def host_overhead_ns(self) -> float:
        """Host time minus the events' window for an empty call: launch and synchronization latency alone."""
        self.synchronize()
        samples = []
        for _ in range(_CALIBRATION_CALLS):
            _, _, window_ns, host_ns = self._measure(lambda: None)
            samples.append(host_ns - window_ns)
        return statistics.median(samples)

    def poison_free_memory(self, reserve_bytes: int) -> None:
        self.synchronize()
        free_now, _ = torch.cuda.mem_get_info(self._index)
        poison_free_memory(self.device, min(reserve_bytes, free_now // 4))
        self.synchronize()

    def device_lost(self, error: BaseException) -> str | None:
        line = context_error_line(error_text(error))
        if line:
            return line
        try:  # an error that broke the context makes every later call fail, a plain synchronize included
            _synchronize(self._index)
        except Exception as probe:
            return _first_line(error_text(probe))
        return None

    def describe(self) -> dict[str, str]:
        properties = torch.cuda.get_device_properties(self._index)
        major, minor = properties.major, properties.minor
        facts = {**super().describe(), "device": properties.name, "capability": f"{major}.{minor}",
                 "multiprocessors": str(properties.multi_processor_count),
                 "memory_gib": f"{properties.total_memory / 2**30:.0f}",
                 "l2_mib": f"{l2_cache_bytes(properties) / 2**20:.0f}", "cuda": str(torch.version.cuda)}
        with contextlib.suppress(metadata.PackageNotFoundError):
            facts["triton"] = metadata.version("triton")
        return facts

    def worker_environment(self) -> dict[str, str]:
        # Build for this device alone (sm_90 on an H100 or H200): one architecture compiles faster than
        # torch's default list, and the build cache keys on it.
        return {"TORCH_CUDA_ARCH_LIST": arch_list(torch.cuda.get_device_capability(self._index))}


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return "unknown CUDA error"
