"""What every GPU platform judges the same way: pure functions, testable without a device.

How large a cache flush must be, how to read a size a device reports, which line of an error names a
failure that left the device unusable, and whether timings show work that escaped the timer. The CUDA,
ROCm, XPU and MPS platforms each gather their own numbers and call these.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from kforge.platforms.base import TimingDoubt

# Small caches still get a flush buffer large enough to evict what a kernel's launch path touched.
MIN_FLUSH_BYTES = 64 * 1024 * 1024

# Timed calls: how much device time may pass after the timed stream's end event before the harness
# concludes that work was pushed elsewhere. Host clock and device events disagree by a few microseconds
# of launch and synchronization latency even for honest calls; the calibration removes most of that and
# the floor absorbs the rest. Both were chosen to be generous; docs/cuda.md says how to check them.
HIDDEN_WORK_FLOOR_NS = 15_000
HIDDEN_WORK_FRACTION = 0.25


def reported_size(properties: object, attribute: str, default: int) -> int:
    """A positive size a device reports as `attribute` of its properties, else `default`."""
    value = getattr(properties, attribute, None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return default


def flush_bytes(cache_bytes: int) -> int:
    """Size of the buffer written between timed calls: twice the caches, so none of the inputs stays resident."""
    return max(2 * cache_bytes, MIN_FLUSH_BYTES)


def marked_line(text: str, markers: Sequence[str]) -> str | None:
    """The first line of `text` holding one of `markers` (lower case), trimmed; None when none does."""
    for line in text.splitlines():
        lowered = line.lower()
        if any(marker in lowered for marker in markers):
            return line.strip()[:300]
    return None


def error_text(error: BaseException) -> str:
    """The messages of an exception and of the ones it was raised from."""
    parts, seen = [], set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def audit_records(records: Sequence[tuple[int, int, int]], times_ns: Sequence[int],
                  overhead_ns: Callable[[], float]) -> TimingDoubt | None:
    """Judge a timing loop's figures against the platform's record of its latest calls.

    `records` holds (reported ns, event window ns, host ns) per timed call, oldest first; `overhead_ns` measures
    the host-minus-events difference of an empty call (asked only when the figures are the platform's own).
    """
    kept = list(records[-len(times_ns):]) if times_ns else []
    if [reported for reported, _, _ in kept] != list(times_ns):
        return TimingDoubt("dynamic.clock", "the timing loop's figures differ from the device events' record")
    reason = hidden_work([window for _, window, _ in kept], [host for _, _, host in kept], overhead_ns(),
                         times_ns)
    return TimingDoubt("dynamic.side-stream", reason) if reason else None


def hidden_work(device_ns: Sequence[int], host_ns: Sequence[int], overhead_ns: float,
                timed_ns: Sequence[int] | None = None) -> str | None:
    """Why the timings show work that ran outside the timed stream, or None.

    `device_ns[i]` is the span the events on the caller's stream measured for call i, from just before
    the call's hold to its end; `host_ns[i]` is the host clock from just before that first event until
    the whole device was idle again; `overhead_ns` is the usual difference between the two for an empty
    call. An honest call's host time exceeds its event span by about that overhead. Work launched on
    another stream and not awaited by the caller's stream keeps the device busy after the end event: the
    host sees it, the events do not. The allowance is a share of what the calls were timed at
    (`timed_ns`, by default the spans themselves).
    """
    if not device_ns or len(device_ns) != len(host_ns):
        return None
    surplus = statistics.median(host - device for device, host in zip(device_ns, host_ns, strict=True)) - overhead_ns
    device = statistics.median(timed_ns if timed_ns else device_ns)
    allowed = max(HIDDEN_WORK_FLOOR_NS, HIDDEN_WORK_FRACTION * device)
    if surplus <= allowed:
        return None
    return (f"the device stayed busy {surplus / 1e3:.1f} us per call after the timed stream had finished "
            f"(its events measured {device / 1e3:.1f} us per call; {allowed / 1e3:.1f} us is allowed): work "
            "ran on another stream that the caller's stream never waited for, out of the timer's sight")
