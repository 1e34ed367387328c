"""Workers forked from a process that has imported torch already, so an evaluation does not wait for the import.

Importing torch and kforge's worker takes 2-3 s on a CPU machine and 8-10 s on the GPU machines measured, the
largest part of what a cached evaluation cost beyond its timed calls. A fork server pays it once: it is started
like a worker (the same scrubbed environment, resource limits and session of its own), imports the worker's
modules, and from then on only forks. Each child confines itself by its own plan exactly as a worker started
afresh does (verify/confine.py) before it reads a request, and then serves as `worker.py`. The server itself
never runs candidate code, never initialises a GPU (a forked child could not use a context its parent made), and
holds no secret: it was started with the worker's environment, not the harness's. Torch counts GPUs through
NVML there (`PYTORCH_NVML_BASED_CUDA_CHECK`), which leaves forking safe; should anything initialise CUDA in the
server all the same, it checks once with a forked probe and, if its children could not use the GPU, exits, and
the pool starts its workers the plain way.

The harness speaks to the server over a Unix socket pair, one message a packet:

- harness -> server: `{"cwd", "env", "plan", "cache_dir"}` with three descriptors (the worker's request pipe,
  its log file, its reply pipe); the server answers `{"pid": N}`, or `{"error": "..."}`;
- server -> harness, whenever a child ends: `{"exited": pid, "code": returncode}` (negative: the signal).

Each child starts a session of its own (the harness kills its whole process group, as for any worker) and
dies with the server, which dies with the harness.

    python -m kforge.verify.forkserver --socket-fd N      (started by the harness)
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_PR_SET_PDEATHSIG = 1
_MESSAGE_BYTES = 1 << 20
_START_S = 120.0  # the server's imports, on a slow file system


class ForkServerError(RuntimeError):
    """The fork server could not be started or stopped answering; callers start workers the plain way."""


# ---- the harness's side -------------------------------------------------------------------------------------
class ForkServer:
    """A running fork server for one worker configuration (environment and limits)."""

    def __init__(self, env: dict[str, str], directory: Path, preexec: Callable[[], None]) -> None:
        """Start the server in `directory` with `env` (the workers' own, scrubbed); `preexec` applies the
        workers' resource limits in it. Returns at once: the server imports while the caller goes on."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket = ours
        self._exits: dict[int, int] = {}
        self._answers: list[dict[str, Any]] = []
        log = open(directory / "forkserver.log", "ab")  # noqa: SIM115 (the server's own, kept while it runs)
        with log:
            self.process = subprocess.Popen(
                [sys.executable, "-X", "faulthandler", "-m", "kforge.verify.forkserver",
                 "--socket-fd", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                cwd=directory, env=env, start_new_session=True, preexec_fn=preexec)
        theirs.close()
        self.log_path = directory / "forkserver.log"

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, cwd: Path, env: dict[str, str], plan: Path, cache_dir: Path, stdin_fd: int, log_fd: int,
              reply_fd: int) -> ForkedProcess:
        """Fork one worker; raises ForkServerError when the server cannot (the caller starts one the plain
        way). The descriptors are the child's copies: the caller closes its own afterwards."""
        message = json.dumps({"cwd": str(cwd), "env": env, "plan": str(plan), "cache_dir": str(cache_dir)})
        try:
            socket.send_fds(self._socket, [message.encode()], [stdin_fd, log_fd, reply_fd])
        except OSError as exc:
            raise ForkServerError(f"the fork server is gone ({exc})") from None
        answer = self._next_answer(_START_S)
        if "pid" not in answer:
            raise ForkServerError(str(answer.get("error", answer)))
        return ForkedProcess(self, int(answer["pid"]))

    def exit_code(self, pid: int, wait_s: float = 0.0) -> int | None:
        """A child's return code once the server saw it end (negative: the signal), else None."""
        deadline = time.monotonic() + wait_s
        while pid not in self._exits:
            remaining = deadline - time.monotonic()
            if not self._receive(max(remaining, 0.0)) and remaining <= 0:
                break
        if pid not in self._exits and not self.alive():
            return -signal.SIGKILL  # the server's children die with it
        return self._exits.get(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._socket.close()
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def _next_answer(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while not self._answers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ForkServerError(f"the fork server did not answer within {timeout_s:.0f} s")
            if not self.alive():
                raise ForkServerError(f"the fork server exited with status {self.process.returncode}")
            self._receive(min(remaining, 1.0))
        return self._answers.pop(0)

    def _receive(self, timeout_s: float) -> bool:
        """Read one message if one comes within `timeout_s`; whether one did."""
        ready, _, _ = select.select([self._socket], [], [], timeout_s)
        if not ready:
            return False
        try:
            data = self._socket.recv(_MESSAGE_BYTES)
        except OSError:
            return False
        if not data:
            return False
        message = json.loads(data)
        if "exited" in message:
            self._exits[int(message["exited"])] = int(message["code"])
        else:
            self._answers.append(message)
        return True


class ForkedProcess:
    """What `Worker` needs of a `subprocess.Popen`, for a worker the fork server started."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: IO[bytes] | None = None  # the worker's request pipe, set by the caller

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, wait_s=3600.0 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return self.returncode


# ---- the server's side --------------------------------------------------------------------------------------
def _serve(channel: socket.socket) -> None:
    import warnings

    # The numerical libraries keep a thread or two parked; they are made for forking (pthread_atfork), and the
    # child, single-threaded, confines itself before anything else.
    warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
    from kforge.verify import worker  # noqa: F401  torch and the rest, once for every child

    _import_compiler()
    if fork_poisoned():
        sys.stderr.write("kforge fork server: CUDA was initialised while importing, so a forked worker could not "
                         "use the GPU; workers start the plain way\n")
        return
    while True:
        _report_exits(channel)
        ready, _, _ = select.select([channel], [], [], 0.05)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(channel, _MESSAGE_BYTES, 3)
        except OSError:
            return
        if not data:
            return  # the harness closed its end
        try:
            request = json.loads(data)
            pid = os.fork()
        except Exception as exc:
            for fd in fds:
                os.close(fd)
            channel.send(json.dumps({"error": f"could not fork a worker: {exc}"}).encode())
            continue
        if pid == 0:
            _child(channel, request, fds)
        for fd in fds:
            os.close(fd)
        channel.send(json.dumps({"pid": pid}).encode())


def _import_compiler() -> None:
    """Dynamo, torch.compile's front end (about 1 s to import on a 2-core machine), once for every child, so that
    a worker timing the torch.compile baseline waits less. Not Inductor's code cache: it fixes paths from the
    importing process's temporary directory (the server's, which a worker cannot write) when it is imported.
    Dynamo reads only the environment it shares with the workers; it starts no thread and touches no GPU (the
    probe child checks the latter). Where it does not import, workers import it when they compile."""
    with contextlib.suppress(Exception):
        import torch._dynamo  # noqa: F401


def fork_poisoned() -> bool:
    """Whether a child forked now would find the GPU unusable: once this process has initialised CUDA (or only
    counted the devices through the CUDA runtime), torch refuses CUDA in every forked child, and a driver some
    other library initialised fails there. Where a GPU is visible, the probe child also runs one operation."""
    import torch

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if not torch.cuda._is_in_bad_fork():
                if torch.cuda._is_compiled() and torch.cuda.device_count() > 0:
                    torch.ones(1, device="cuda").add_(1)
                    torch.cuda.synchronize()
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) != 0


def _report_exits(channel: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):
            channel.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())


def _child(channel: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become a worker exactly as `worker_start` makes one, then serve. Never returns."""
    code = 1
    try:
        channel.close()
        os.setsid()
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the server
        stdin_fd, log_fd, reply_fd = fds
        os.dup2(stdin_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(stdin_fd)
        os.close(log_fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile

        tempfile.tempdir = None  # found again from this worker's TMPDIR
        from kforge.verify import confine, worker

        report = confine.apply(confine.Confinement.from_json(Path(request["plan"]).read_text()))
        worker.main(["--reply-fd", str(reply_fd), "--cache-dir", request["cache_dir"]], confinement=report.as_dict())
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="kforge fork server: forks workers (started by the harness)")
    parser.add_argument("--socket-fd", type=int, required=True)
    args = parser.parse_args(argv)
    _serve(socket.socket(fileno=args.socket_fd))


if __name__ == "__main__":
    main(sys.argv[1:])
