"""Noticing a candidate that rebinds the functions the measurement relies on (runs inside the worker).

The worker snapshots these attributes before it imports the candidate and compares after every call.
Timers and comparisons are captured or run elsewhere, so a patch gains nothing; it is still reported,
because a kernel that patches clocks or comparisons is not an honest kernel.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

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
    "kforge.platforms.cuda_hold": ("_hold_kernel", "hold_device", "_grids"),
    "kforge.platforms.cuda_poison": ("_memory_snapshot", "_current_stream", "_empty"),
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
