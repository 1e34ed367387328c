"""Which process owns a running run, and whether it is still there.

A run records its owner when it starts or resumes: the process id and the process's start time, since a pid alone
is reused once its process is gone. A run still marked `running` whose owner has gone (killed with SIGKILL, the
machine's OOM killer, a lost terminal) reads as `interrupted`; that is `shown_status`, a pure function of what
was recorded and a process lookup, so it is tested without killing anything.

The owner is looked for on this machine, in this process namespace: a store copied from elsewhere shows its
unfinished runs as interrupted, which they are in the copy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from kforge.store.records import Owner, RunStatus

# pid -> the start of the live process with that pid, or None when there is none.
ProcessLookup = Callable[[int], int | None]

# /proc/PID/stat after the command name: field 3 (state) is the first, field 22 (starttime) the twentieth.
_STATE, _STARTTIME = 0, 19


def process_start(pid: int) -> int | None:
    """When the live process `pid` started, or None when there is no such process (a zombie counts as gone: it
    runs nothing, it only waits for its parent to read its exit status)."""
    if pid <= 0:
        return None
    if sys.platform.startswith("linux"):
        return _linux_start(pid)
    return _psutil_start(pid)


def current_owner() -> Owner | None:
    """This process as a run's owner (None where its start cannot be read: the run then shows what it records)."""
    started = process_start(os.getpid())
    return Owner(os.getpid(), started) if started is not None else None


def shown_status(status: RunStatus, owner: Owner | None, lookup: ProcessLookup) -> RunStatus:
    """A run's status as it stands: `interrupted` for a run recorded `running` whose owner is gone (no process with
    its pid, or one that started at another time); the recorded status otherwise, and always where no owner was
    recorded (a store from before owners were)."""
    if status != "running" or owner is None:
        return status
    return "running" if lookup(owner.pid) == owner.started else "interrupted"


def _linux_start(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses of its own.
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) <= _STARTTIME or fields[_STATE] in ("Z", "X"):
        return None
    return int(fields[_STARTTIME])


def _psutil_start(pid: int) -> int | None:
    import psutil  # only off Linux: `kforge runs` stays quick to start there

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return round(process.create_time() * 1000)
    except psutil.Error:
        return None
