"""Profiling a model's forward call with torch.profiler (runs inside the worker, on any platform).

Where the platform has a device profiler activity (CUDA, ROCm, XPU), the rows are the device's kernels,
found through the operators launched inside each forward call. Where it has none (the CPU), the rows are
the top-level operators of the call and, for C++ extensions, the extension's function as one row: the
Python tracer sees the call into the extension, which the operator profiler alone would miss.

Each forward call gets freshly drawn inputs, made outside the region the rows are taken from. The wall
time per call is measured separately, without the profiler, with the platform's own timer.
"""

from __future__ import annotations

import gc
import importlib.machinery
import re
import statistics
import sys
import sysconfig
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from torch.autograd.profiler_util import FunctionEvent
from torch.profiler import ProfilerActivity, profile, record_function

from kforge.platforms.base import Platform
from kforge.profiling.peaks import device_name
from kforge.profiling.schema import Profile, kernel_rows

#: the record_function label around each profiled forward call; rows come only from inside it
MARKER = "kforge::forward"

# Platform name -> the torch.profiler activity that records its kernels (ROCm reports through CUDA's).
_DEVICE_ACTIVITY = {"cuda": "CUDA", "rocm": "CUDA", "xpu": "XPU", "mtia": "MTIA"}

# What the Python tracer calls a pybind11 function: '<built-in method NAME of pybind11_builtins...>'
# (older pybind11 builds say 'of PyCapsule object').
_PYBIND_CALL = re.compile(r"^<built-in method (\w+) of (?:pybind11|PyCapsule)")
_PYTHON_FRAME = re.compile(r"^(<built-in |nn\.Module: |.*\(\d+\): )")

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
        _, elapsed_ns = platform.time_call(lambda inputs=inputs: call(inputs))
        times.append(elapsed_ns / 1e3)
    return times


def _device_activity(platform: Platform) -> ProfilerActivity | None:
    name = _DEVICE_ACTIVITY.get(platform.name)
    return None if name is None else getattr(ProfilerActivity, name, None)


def _profiled_events(call: Call, make_inputs: MakeInputs, platform: Platform, calls: int, seed: int,
                     activity: ProfilerActivity | None) -> list[FunctionEvent]:
    activities = [ProfilerActivity.CPU] if activity is None else [ProfilerActivity.CPU, activity]
    # The Python tracer is only needed to see calls into C++ extensions on host-only platforms; on a
    # device the extension's kernels show up by themselves, and the tracer's overhead would be wasted.
    # torch now and then fails to decode a traced name it recorded (UnicodeDecodeError while parsing);
    # another run goes through, and as a last resort the tracer is left off.
    tracer_attempts = (True, True, False) if activity is None else (False,)
    for attempt, with_stack in enumerate(tracer_attempts):
        with profile(activities=activities, with_stack=with_stack) as prof:
            for index in range(calls):
                inputs = make_inputs(seed + index)
                platform.synchronize()
                with record_function(MARKER):
                    call(inputs)
                platform.synchronize()
        try:
            return list(prof.events())
        except UnicodeDecodeError:
            if attempt == len(tracer_attempts) - 1:
                raise
    raise AssertionError("unreachable")


def _forward_roots(events: list[FunctionEvent]) -> list[FunctionEvent]:
    return [event for event in events if event.name == MARKER]


def _host_totals(events: list[FunctionEvent]) -> dict[str, tuple[int, float]]:
    """Top-level operators and extension calls inside the markers, with their inclusive CPU time."""
    roots = _forward_roots(events)
    extensions = _extension_functions(_pybind_names(roots))
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for root in roots:
        for name, event in _top_level(root, extensions):
            totals[name][0] += 1
            totals[name][1] += event.cpu_time_total
    return {name: (int(count), total) for name, (count, total) in totals.items()}


def _top_level(event: FunctionEvent, extensions: dict[str, str]) -> Iterator[tuple[str, FunctionEvent]]:
    for child in event.cpu_children:
        extension = _extension_call(child, extensions)
        if extension is not None:
            yield extension, child
        elif _is_python_frame(child) or child.name == MARKER:
            yield from _top_level(child, extensions)
        else:
            yield child.name, child


def _extension_call(event: FunctionEvent, extensions: dict[str, str]) -> str | None:
    match = _PYBIND_CALL.match(event.name)
    if match is None or match.group(1) not in extensions:
        return None
    return f"{extensions[match.group(1)]}::{match.group(1)}"


def _is_python_frame(event: FunctionEvent) -> bool:
    flag = getattr(event, "is_python_function", None)  # torch >= 2.5; older builds only have the name
    return bool(flag) if flag is not None else bool(_PYTHON_FRAME.match(event.name))


def _pybind_names(roots: list[FunctionEvent]) -> set[str]:
    names: set[str] = set()
    stack = list(roots)
    while stack:
        event = stack.pop()
        match = _PYBIND_CALL.match(event.name)
        # Leading underscores are torch's own bindings (_get_tracing_state and the like); extensions
        # export the names the candidate chose, which are public.
        if match is not None and not match.group(1).startswith("_"):
            names.add(match.group(1))
        stack.extend(event.cpu_children)
    return names


def _extension_functions(wanted: set[str]) -> dict[str, str]:
    """{function name: module name} for those of `wanted` that a run-time built extension defines.

    Run-time built extensions (load_inline, load) are the native modules outside the interpreter's own
    directories (where torch, numpy and the standard library live). torch imports them without entering
    them in sys.modules, so when sys.modules does not explain every name, the garbage collector's list of
    live modules is searched too (a fraction of a second, and only for profiles that call pybind11 code).
    Lazy module proxies are skipped (`type(o) is ModuleType`): touching them imports or warns.
    """
    found: dict[str, str] = {}
    if not wanted:
        return found
    installed = _installed_roots()
    _collect_functions(list(sys.modules.values()), wanted, installed, found)
    if not wanted <= found.keys():
        _collect_functions([o for o in gc.get_objects() if type(o) is ModuleType], wanted, installed, found)
    return found


def _installed_roots() -> set[Path]:
    roots = {Path(path).resolve() for key, path in sysconfig.get_paths().items()
             if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {Path(path).resolve() for path in sys.path if "site-packages" in path or "dist-packages" in path}
    return roots


def _collect_functions(modules: list[Any], wanted: set[str], installed: set[Path], found: dict[str, str]) -> None:
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for module in modules:
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.endswith(suffixes):
            continue
        resolved = Path(file).resolve()
        if any(resolved.is_relative_to(root) for root in installed):
            continue
        for name in wanted & set(vars(module)):
            found.setdefault(name, module.__name__)


def _device_totals(events: list[FunctionEvent]) -> dict[str, tuple[int, float]]:
    """Device kernels launched inside the markers, by name, with their device time."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    stack = _forward_roots(events)
    while stack:
        event = stack.pop()
        for kernel in event.kernels:
            totals[kernel.name][0] += 1
            totals[kernel.name][1] += kernel.duration
        stack.extend(event.cpu_children)
    return {name: (int(count), total) for name, (count, total) in totals.items()}
