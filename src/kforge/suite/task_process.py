"""A slot's task process, kept for its tasks one after another (`python -m kforge.suite.task --serve`).

Starting a task's process costs importing torch and kforge (2-3 s on a CPU machine, 8-10 s on the GPU machines
measured) and a fork server for its workers (the same again, in the background): per problem, that was a
sizeable share of an engine suite's time. A kept process pays it once per slot. Candidates never run in it (they
run in workers, as everywhere), so keeping it across problems shares nothing a candidate could reach. Should it die
(a crash, a kill), the job it ran is reported lost and the next job starts a fresh process.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

_POLL_S = 0.5


class TaskProcessClosed(RuntimeError):
    """The task process was closed while a job ran in it (the suite is stopping): the job has no result."""


class TaskProcess:
    """One kept task process with `environment` (the slot's), its own output in `log`; started on first use."""

    def __init__(self, environment: dict[str, str], log: Path) -> None:
        self.environment = environment
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._replies: int | None = None
        self._pending = b""
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The running process's id; None before the first job and after it ended."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def run(self, spec_file: Path, row_file: Path, log: Path, watch: Callable[[], None] | None = None) -> int | None:
        """Run one job (its row written to `row_file`, its events to `log`), calling `watch` about twice a second
        while it runs; None when the process answered, else its exit status (it is gone: the next job starts
        another). TaskProcessClosed when `close` is called before or while it runs."""
        process = self._started()
        assert process.stdin is not None and self._replies is not None
        job = json.dumps({"spec": str(spec_file), "row": str(row_file), "log": str(log)}) + "\n"
        try:
            process.stdin.write(job.encode())
            process.stdin.flush()
        except OSError:
            return self._lost()
        while True:
            if watch:
                watch()
            replies = self._replies
            if self._closed or replies is None:
                raise TaskProcessClosed("the task process was closed while its job ran")
            try:
                ready, _, _ = select.select([replies], [], [], _POLL_S)
                data = os.read(replies, 4096) if ready else b""
            except (OSError, ValueError):  # closed under us, between the test above and the read
                if self._closed:
                    raise TaskProcessClosed("the task process was closed while its job ran") from None
                raise
            if ready:
                if not data:
                    return self._lost()
                self._pending += data
                if b"\n" in self._pending:
                    _, self._pending = self._pending.split(b"\n", 1)
                    return None
            elif process.poll() is not None:
                return self._lost()

    def close(self) -> None:
        """End the process: its input closed, it finishes and exits; killed if it does not within seconds. A job
        running in it meanwhile (another thread's `run`) ends with TaskProcessClosed; none starts afterwards."""
        self._closed = True
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._close_replies()

    def _started(self) -> subprocess.Popen[bytes]:
        if self._closed:
            raise TaskProcessClosed("the task process was closed")
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._lost()
        ours, theirs = os.pipe()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "kforge.suite.task", "--serve", str(theirs), str(self.log)]
        with open(self.log, "a") as errors:
            self._process = subprocess.Popen(command, env={**os.environ, **self.environment}, stdin=subprocess.PIPE,
                                             stdout=errors, stderr=errors, pass_fds=(theirs,),
                                             preexec_fn=die_with_parent)
        os.close(theirs)
        self._replies = ours
        return self._process

    def _lost(self) -> int | None:
        """Forget a process that is gone (or going): its status, None when there was none."""
        process, self._process = self._process, None
        self._close_replies()
        if process is None:
            return None
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            return process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def _close_replies(self) -> None:
        if self._replies is not None:
            os.close(self._replies)
            self._replies = None
        self._pending = b""


def die_with_parent() -> None:
    """Runs in a task's process before exec: it gets SIGKILL when the suite's process dies (Linux)."""
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
