"""Noticing a candidate that rebinds the functions the measurement relies on (runs inside the worker).

The worker snapshots these attributes before it imports the candidate and compares after every call.
Timers and comparisons are captured or run elsewhere, so a patch gains nothing; it is still reported,
because a kernel that patches clocks or comparisons is not an honest kernel.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

WATCHED: dict[str, tuple[str, ...]] = {
    "time": ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
             "process_time", "process_time_ns", "sleep"),
    "torch": ("allclose", "isclose", "equal", "save", "load", "randn", "rand", "empty",
              "zeros", "no_grad", "from_numpy"),
    "torch.Tensor": ("__eq__", "__ne__", "__lt__", "__gt__", "__abs__", "__sub__", "clone", "detach", "copy_",
                     "to", "cpu", "cuda", "allclose", "equal", "data_ptr", "__torch_function__"),
    "torch.testing": ("assert_close",),
    "torch.cuda": ("synchronize", "Event", "Stream", "current_stream", "memory_snapshot", "mem_get_info",
                   "empty_cache"),
    "torch.cuda.Event": ("record", "elapsed_time", "synchronize", "query", "wait"),
    "builtins": ("isinstance", "type", "len", "abs", "max", "min", "sum", "open", "print", "__import__"),
    "kforge.platforms.cpu": ("_clock",),
    "kforge.platforms.cuda": ("_clock", "_synchronize", "_current_stream", "_Event", "_record", "_elapsed_time",
                              "_hold"),
    "kforge.platforms.cuda.hold": ("_hold_kernel", "hold_device", "_grids"),
    "kforge.platforms.cuda.poison": ("_memory_snapshot", "_current_stream", "_empty"),
    "kforge.verify.tensors": ("plain_copy", "save"),
    "kforge.verify.timing": ("second_clock",),
    "kforge.verify.worker": ("second_clock",),
}


def _resolve(path: str) -> Any:
    """A module, or a class inside one ('torch.Tensor', 'torch.cuda.Event')."""
    try:
        return importlib.import_module(path)
    except ImportError:
        owner, _, name = path.rpartition(".")
        return getattr(_resolve(owner), name)


def _identity(owner: str, name: str) -> int:
    # Static lookup: reading a classmethod through getattr makes a new bound method each time.
    return id(inspect.getattr_static(_resolve(owner), name, None))


class TamperWatch:
    """Identity snapshot of the watched attributes."""

    def __init__(self) -> None:
        self._snapshot = {(owner, name): _identity(owner, name)
                          for owner, names in WATCHED.items() for name in names}

    def changed(self) -> list[str]:
        """Dotted names of the watched attributes that no longer hold what they held at the snapshot."""
        return sorted(f"{owner}.{name}" for (owner, name), ident in self._snapshot.items()
                      if _identity(owner, name) != ident)


def _fp32_precision(backend: str, op: str) -> Callable[[], object] | None:
    getter = getattr(torch._C, "_get_fp32_precision_getter", None)  # torch >= 2.9
    return None if getter is None else lambda: getter(backend, op)


# Process-wide settings that decide the numerics or the algorithms of torch's own operators, read through
# torch's C functions captured here, before any candidate code exists (torch versions without one are skipped).
# The reference is timed under the settings its worker started with; a candidate that changes them (TF32 or
# bf16 for a vendor GEMM it may call, cuDNN's benchmark search) is measured under other rules.
_SETTINGS: dict[str, Callable[[], object] | None] = {
    "float32 matmul precision": getattr(torch._C, "_get_float32_matmul_precision", None),
    "cuBLAS TF32": getattr(torch._C, "_get_cublas_allow_tf32", None),
    "cuBLAS reduced-precision fp16 reductions": getattr(
        torch._C, "_get_cublas_allow_fp16_reduced_precision_reduction", None),
    "cuBLAS reduced-precision bf16 reductions": getattr(
        torch._C, "_get_cublas_allow_bf16_reduced_precision_reduction", None),
    "cuDNN TF32": getattr(torch._C, "_get_cudnn_allow_tf32", None),
    "cuDNN benchmark": getattr(torch._C, "_get_cudnn_benchmark", None),
    "default dtype": torch.get_default_dtype,
    **{f"{backend} {op} fp32 precision": _fp32_precision(backend, op)
       for backend, op in (("cuda", "matmul"), ("cudnn", "conv"), ("mkldnn", "matmul"), ("mkldnn", "conv"))},
}


def _read_settings() -> dict[str, object]:
    values = {}
    for label, read in _SETTINGS.items():
        if read is None:
            continue
        try:
            values[label] = read()
        except Exception:  # a getter this build of torch does not support
            continue
    return values


_UNREADABLE = object()


class SettingsWatch:
    """Snapshot of torch's process-wide numerics settings, taken before a candidate is imported."""

    def __init__(self) -> None:
        self._snapshot = _read_settings()

    def changed(self) -> list[str]:
        """'label (before -> after)' for each setting that no longer holds its snapshot's value."""
        now = _read_settings()
        return [f"{label} ({before} -> {now.get(label, 'unreadable')})" for label, before in self._snapshot.items()
                if now.get(label, _UNREADABLE) != before]


def _thread_scheduling() -> set[tuple[int, int]]:
    """(nice, scheduling policy) of every thread of this process, read from /proc (Linux); elsewhere the
    calling thread's nice value only."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return {(os.getpriority(os.PRIO_PROCESS, 0), 0)} if hasattr(os, "getpriority") else set()
    found = set()
    for task in tasks.iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # a thread that ended while being read
            continue
        found.add((int(fields[16]), int(fields[38])))  # stat fields 19 (nice) and 41 (policy)
    return found


class SchedulingWatch:
    """The priorities the worker's threads ran at before the candidate was imported. A candidate that raises
    its own priority (nice below the start's, or a real-time policy) gets more of a busy machine than the
    reference it is compared with."""

    def __init__(self) -> None:
        before = _thread_scheduling()
        self._nice = min((nice for nice, _ in before), default=0)

    def changed(self) -> list[str]:
        """'nice N' or 'real-time policy P' for each raised priority now held by one of the threads."""
        raised = set()
        for nice, policy in _thread_scheduling():
            if nice < self._nice:
                raised.add(f"nice {self._nice} -> {nice}")
            if policy not in (0, 3, 5):  # SCHED_OTHER, SCHED_BATCH, SCHED_IDLE: not above the others
                raised.add(f"real-time scheduling policy {policy}")
        return sorted(raised)


@dataclass(frozen=True)
class Finding:
    """What a watch saw: the rule it breaks and a line for the verdict."""

    rule: str
    message: str


class CandidateWatch:
    """Everything the worker watches a candidate for: rebound functions (from the worker's start), torch's
    settings (from just before the candidate is imported: the problem and the platform may set their own),
    and its threads' priorities."""

    def __init__(self) -> None:
        self.functions = TamperWatch()
        self.scheduling = SchedulingWatch()
        self.settings: SettingsWatch | None = None

    def before_candidate(self) -> None:
        """Call right before importing the candidate: the settings it must leave as they are."""
        self.settings = self.settings or SettingsWatch()

    def finding(self, candidate_loaded: bool) -> Finding | None:
        rebound = self.functions.changed()
        if rebound:
            return Finding("dynamic.tamper", f"the candidate rebound {', '.join(rebound[:5])}")
        settings = self.settings.changed() if self.settings is not None else []
        if settings:
            return Finding("dynamic.settings", f"the candidate changed torch's settings: {', '.join(settings)}; "
                                               "the reference is timed under the ones its worker started with")
        raised = self.scheduling.changed() if candidate_loaded else []
        if raised:
            return Finding("dynamic.scheduling", f"the candidate raised its threads' priority ({', '.join(raised)}): "
                                                 "the reference runs at the priority the worker started with")
        return None
