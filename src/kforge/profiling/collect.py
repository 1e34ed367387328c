"""Profiling a model's forward call with torch.profiler (runs inside the worker, on any platform).

Where the platform has a device profiler activity (CUDA, ROCm, XPU), the rows are the device's kernels
that ran inside each forward call, whoever launched them (ATen, a C++/CUDA extension, Triton). Where it
has none (the CPU), the rows are the top-level operators of the call and, for C++ extensions, the
extension's function as one row (see `kforge.profiling.extensions`).

Each forward call gets freshly drawn inputs, made outside the region the rows are taken from. The wall
time per call is measured separately, without the profiler, with the platform's own timer.
"""

from __future__ import annotations

import functools
import statistics
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent
from torch.profiler import ProfilerActivity, profile, record_function

from kforge.platforms.base import Platform
from kforge.profiling.extensions import labelled_extension_calls
from kforge.profiling.peaks import device_name
from kforge.profiling.schema import Profile, kernel_rows

#: the record_function label around each profiled forward call; rows come only from inside it
MARKER = "kforge::forward"

# Platform name -> the torch.profiler activity that records its kernels (ROCm reports through CUDA's).
_DEVICE_ACTIVITY = {"cuda": "CUDA", "rocm": "CUDA", "xpu": "XPU", "mtia": "MTIA"}

Call = Callable[[list[Any]], Any]
MakeInputs = Callable[[int], list[Any]]


def profile_callable(call: Call, make_inputs: MakeInputs, platform: Platform, *, calls: int = 5,
                     warmup: int = 2, seed: int = 0) -> Profile:
    """Profile `call(make_inputs(seed + i))` for `calls` forward calls after `warmup` unprofiled ones.

    Run it under `torch.no_grad()` as the timing loop does. Raises whatever `call` raises.
    """
    if calls < 1:
        raise ValueError("calls must be at least 1")
    for index in range(warmup):
        call(make_inputs(seed + index))
    platform.synchronize()
    wall_us = _wall_times_us(call, make_inputs, platform, calls, seed + warmup)
    activity = _device_activity(platform)
    events = _profiled_events(call, make_inputs, platform, calls, seed + warmup + calls, activity)
    totals = _host_totals(events) if activity is None else _device_totals(events)
    rows = kernel_rows(totals)
    launches = sum(count for count, _ in totals.values())
    return Profile(source="torch.profiler", platform=platform.name, device=device_name(platform), calls=calls,
                   row_kind="op" if activity is None else "kernel", rows=rows,
                   device_time_us_per_call=sum(row.total_us for row in rows) / calls,
                   wall_time_us_per_call=statistics.median(wall_us), launches_per_call=launches / calls)


def _wall_times_us(call: Call, make_inputs: MakeInputs, platform: Platform, calls: int, seed: int) -> list[float]:
    times = []
    for index in range(calls):
        inputs = make_inputs(seed + index)
        platform.synchronize()
        _, elapsed_ns = platform.time_call(functools.partial(call, inputs))
        times.append(elapsed_ns / 1e3)
    return times


def _device_activity(platform: Platform) -> ProfilerActivity | None:
    name = _DEVICE_ACTIVITY.get(platform.name)
    return None if name is None else getattr(ProfilerActivity, name, None)


def _profiled_events(call: Call, make_inputs: MakeInputs, platform: Platform, calls: int, seed: int,
                     activity: ProfilerActivity | None) -> list[FunctionEvent]:
    activities = [ProfilerActivity.CPU] if activity is None else [ProfilerActivity.CPU, activity]
    # On a device the extension's kernels show up by themselves; only the host needs its calls labelled.
    labels = labelled_extension_calls() if activity is None else nullcontext()
    with warnings.catch_warnings(), labels:
        # Some torch releases warn that events do not accumulate across cycles; there is one cycle.
        warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle.*")
        with profile(activities=activities) as prof:
            for index in range(calls):
                inputs = make_inputs(seed + index)
                platform.synchronize()
                with record_function(MARKER):
                    call(inputs)
                    platform.synchronize()  # so the marker spans the call's kernels on the device too
    return list(prof.events())


def _forward_roots(events: list[FunctionEvent]) -> list[FunctionEvent]:
    return [event for event in events if event.name == MARKER]


def _host_totals(events: list[FunctionEvent]) -> dict[str, tuple[int, float]]:
    """The operators (and labelled extension calls) directly inside the markers, with inclusive CPU time."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for root in _forward_roots(events):
        for event in _top_level(root):
            totals[event.name][0] += 1
            totals[event.name][1] += event.cpu_time_total
    return {name: (int(count), total) for name, (count, total) in totals.items()}


def _top_level(event: FunctionEvent) -> Iterator[FunctionEvent]:
    for child in event.cpu_children:
        if child.name == MARKER:  # a forward call that profiles itself: look through to its operators
            yield from _top_level(child)
        else:
            yield child


def _device_totals(events: list[FunctionEvent]) -> dict[str, tuple[int, float]]:
    """Device kernels (and copies) that ran inside the markers, by name, with their device time.

    Matched by time rather than by the operator that launched them: a Triton kernel or an extension's
    own launch has no operator around it. The device is idle when each marker opens and drained before
    it closes, so every device event starting inside a marker belongs to that forward call.
    """
    windows = [(event.time_range.start, event.time_range.end) for event in events if event.name == MARKER]
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for event in events:
        # The marker itself also appears on the device timeline, as an annotation rather than a kernel.
        if event.device_type == DeviceType.CPU or event.name == MARKER:
            continue
        if any(start <= event.time_range.start <= end for start, end in windows):
            totals[event.name][0] += 1
            totals[event.name][1] += event.time_range.elapsed_us()
    return {name: (int(count), total) for name, (count, total) in totals.items()}
