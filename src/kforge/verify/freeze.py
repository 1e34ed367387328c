"""Stopping a candidate's every process while something else is timed, so that it cannot slow the baselines down.

A candidate that forks helpers (or leaves threads) burning the CPU only while it is not being called makes the
reference look slower and itself faster. While a baseline is timed, the harness stops every process the
candidate's worker may have started (SIGSTOP, which no process can catch or ignore) and lets them go on after.

Which processes: where the worker has a process namespace of its own (docs/harness.md, the kernel sandbox),
every process in that namespace, which no descendant can leave; elsewhere the worker's descendants and every
process in its session (a helper that starts a session of its own and is adopted by init escapes this; the
verdict's sandbox warning already says that the process namespace is missing).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import psutil

# A process being stopped can have forked an instant before: look again until a pass finds nothing new.
_MAX_PASSES = 20
# A signal takes effect when its process next enters the kernel (at once for a sleeping one, within a scheduler
# tick for a busy one): the baseline starts only once every process is seen stopped, or after this long.
_SETTLE_S = 0.5


def _namespace(pid: int, which: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{which}")
    except OSError:
        return None


def _in_namespace(namespace: str) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _namespace(int(entry.name), "pid") == namespace:
            found.add(int(entry.name))
    return found


def _descendants_and_session(pid: int) -> set[int]:
    found = {pid}
    with contextlib.suppress(psutil.Error):
        found |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
    try:
        session = os.getsid(pid)
    except OSError:
        return found
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getsid(process.pid) == session:
                found.add(process.pid)
    return found


def worker_processes(pid: int) -> set[int]:
    """`pid` (a worker as the harness started it) and every process it may have started."""
    own = _namespace(pid, "pid")
    children = _namespace(pid, "pid_for_children")
    if children is not None and children != own:
        return {pid} | _in_namespace(children)
    return _descendants_and_session(pid)


def _signal_all(pids: Iterable[int], number: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


def stop(pid: int) -> set[int]:
    """Stop the worker `pid` and every process it may have started; the set stopped."""
    stopped: set[int] = set()
    for _ in range(_MAX_PASSES):
        new = worker_processes(pid) - stopped
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
    _settle(stopped)
    return stopped


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # gone
    return state not in (b"T", b"t", b"Z", b"X")


def _settle(pids: set[int]) -> None:
    deadline = time.monotonic() + _SETTLE_S
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.001)


def resume(stopped: Iterable[int]) -> None:
    _signal_all(stopped, signal.SIGCONT)


@contextlib.contextmanager
def stopped(pids: Iterable[int]) -> Iterator[None]:
    """Every worker in `pids` stopped, with all it started, for the length of the block."""
    held: set[int] = set()
    try:
        for pid in pids:
            held |= stop(pid)
        yield
    finally:
        resume(held)
