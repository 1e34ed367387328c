"""Turns on a device that several processes judge on at once: timing alone, everything else side by side.

A suite may run more task processes than it has devices (`kforge suite --workers`): while one process times a
kernel, another can build, import, compile and check its own candidate. What must not overlap is timing and
any other work on the device, or the figures would measure the neighbour too. The processes that share a device
share one lock file, named by the environment variable `KFORGE_DEVICE_LOCK` (the suite sets it per slot):
work on the device holds it shared, timing holds it alone. A process without the variable locks nothing.

The lock is `flock` on the file, so it is released when its holder dies (a task process killed mid-timing
blocks nobody). Timing is preferred: a process waiting to time passes through a gate file first and keeps the
gate closed while it waits, so that no new shared holder slips in ahead of it and starves it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no locking, which is what a process without the variable gets anyway
    fcntl = None  # type: ignore[assignment]

ENV = "KFORGE_DEVICE_LOCK"


class DeviceLock:
    """One process's hold on a shared lock file: `shared()` for work on the device, `exclusive()` for timing.

    Re-entrant within the process: `shared()` inside `shared()` holds nothing more, and `exclusive()` inside
    `shared()` gives the shared hold up while it waits (two processes each waiting to go from shared to alone
    would otherwise wait for each other forever) and takes it back afterwards. `waited_s` adds up the seconds
    this process spent waiting for the lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gate_path = path.with_name(path.name + ".gate")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._gate_fd = os.open(self.gate_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mutex = threading.RLock()  # one hold per process: the threads of a process take turns
        self._shared_depth = 0
        self._exclusive_depth = 0
        self.waited_s = 0.0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._mutex:
            if self._shared_depth == 0 and self._exclusive_depth == 0:
                self._take_shared()
            self._shared_depth += 1
            try:
                yield
            finally:
                self._shared_depth -= 1
                if self._shared_depth == 0 and self._exclusive_depth == 0:
                    _flock(self._fd, "unlock")

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._mutex:
            if self._exclusive_depth:
                self._exclusive_depth += 1
                try:
                    yield
                finally:
                    self._exclusive_depth -= 1
                return
            held_shared = self._shared_depth > 0
            if held_shared:
                _flock(self._fd, "unlock")
            self._take_exclusive()
            self._exclusive_depth = 1
            try:
                yield
            finally:
                self._exclusive_depth = 0
                _flock(self._fd, "unlock")
                if held_shared:
                    self._take_shared()

    def _take_shared(self) -> None:
        started = time.monotonic()
        _flock(self._gate_fd, "exclusive")  # passes only while nobody waits to time
        _flock(self._gate_fd, "unlock")
        _flock(self._fd, "shared")
        self.waited_s += time.monotonic() - started

    def _take_exclusive(self) -> None:
        started = time.monotonic()
        _flock(self._gate_fd, "exclusive")  # closed to new shared holders while the present ones finish
        try:
            _flock(self._fd, "exclusive")
        finally:
            _flock(self._gate_fd, "unlock")
        self.waited_s += time.monotonic() - started


class NoLock:
    """What a process that shares its device with no other gets: holds nothing, waits for nothing."""

    waited_s = 0.0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        yield


_locks: dict[str, DeviceLock] = {}
_locks_mutex = threading.Lock()


def device_lock() -> DeviceLock | NoLock:
    """This process's lock on its device, as `KFORGE_DEVICE_LOCK` names it; NoLock without the variable."""
    path = os.environ.get(ENV, "")
    if not path or fcntl is None:
        return NoLock()
    with _locks_mutex:
        if path not in _locks:
            _locks[path] = DeviceLock(Path(path))
        return _locks[path]


def _flock(fd: int, how: str) -> None:
    if fcntl is None:
        return
    fcntl.flock(fd, {"shared": fcntl.LOCK_SH, "exclusive": fcntl.LOCK_EX, "unlock": fcntl.LOCK_UN}[how])
