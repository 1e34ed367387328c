"""Worker processes: started with limits and a scrubbed environment, spoken to over pipes, killed when needed.

What a worker gets: its own session (so the whole process group can be killed), its own temporary
directory as working directory and HOME, an address-space limit where the platform allows one, no core
dumps, and an environment reduced to an allowlist with anything that looks like a secret removed. The
harness watches the worker's resident memory as well, and kills it on a wall-clock deadline.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psutil
from pydantic import BaseModel

import kforge
from kforge.verify.forkserver import ForkedProcess, ForkServer, ForkServerError
from kforge.verify.protocol import Failure, Greeting, MalformedReply, ReplyT, read_reply
from kforge.verify.sandbox_rules import confinement_for, worker_search_path

_ENV_ALLOWED = re.compile(
    r"^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|CC|CXX|CUDA_HOME|CUDA_PATH|CUDA_VISIBLE_DEVICES|NVIDIA_[A-Z_]+|"
    r"HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|ZE_AFFINITY_MASK|"
    r"LD_LIBRARY_PATH|LIBRARY_PATH|CPATH|OMP_[A-Z_]+|MKL_[A-Z_]+|OPENBLAS_[A-Z_]+|KMP_[A-Z_]+|GOMP_[A-Z_]+|"
    r"TORCH_CUDA_ARCH_LIST|MAX_JOBS|TRITON_[A-Z_]+|VIRTUAL_ENV|CONDA_PREFIX|PYTHONHASHSEED)$")
_ENV_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)
# glibc hands freed blocks back to the OS and maps large ones afresh, so whether a call paid page faults for its
# temporaries depended on the heap's layout in its process: one eager reference timed 0.64 ms in one fresh
# process and 2.23 ms in the next (1161 against 220 minor faults a call). Workers keep freed memory instead
# (blocks up to 32 MiB come from the heap and stay there), candidate and reference alike; a C library other
# than glibc ignores the variable.
ALLOCATOR_TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"
_LOG_TAIL_BYTES = 4000
_CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR")
# How often the harness reads the worker's resident memory while it waits. Rarely: each reading walks /proc
# and takes CPU time from the kernel being timed on the same cores; RLIMIT_AS is the hard limit meanwhile.
_MEMORY_POLL_S = 1.0


SANDBOX_HINT = ("(refused by kforge's sandbox: a candidate may write only its worker's own directory, read only "
                "the interpreter, the toolchain and that directory, start only the build tools, and has no "
                "network; see docs/harness.md#the-kernel-sandbox)")


class SandboxUnavailable(RuntimeError):
    """The kernel cannot enforce the sandbox's limits and the caller required them; one line for the user."""


class WorkerFailure(Exception):
    """The worker did not answer: it died, hung past its deadline, or exceeded its memory."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "crashed" or "timeout"


@dataclass(frozen=True)
class Limits:
    memory_mb: int | None = 8192
    limit_address_space: bool = True


def scrubbed_environment(extra: dict[str, str], home: Path) -> dict[str, str]:
    """The worker's environment: allowlisted variables minus anything secret-looking, plus `extra`."""
    env = {key: value for key, value in os.environ.items()
           if _ENV_ALLOWED.match(key) and not _ENV_SECRET.search(key)}
    package_root = str(Path(kforge.__file__).resolve().parent.parent)
    env.update({"HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": package_root, "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "GLIBC_TUNABLES": ALLOCATOR_TUNABLES,
                "PATH": worker_search_path(env.get("PATH", os.defpath))})
    env.update(extra)
    return env


def _limit_child(limits: Limits) -> None:
    """Runs in the child between fork and exec."""
    if kforge.CPUS_AT_START:  # undo a pin the harness's own OpenMP runtime took (see kforge/__init__.py)
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, kforge.CPUS_AT_START)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.memory_mb and limits.limit_address_space:
        size = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if limits.memory_mb:
        # No file a worker writes may outgrow its memory (issue 38): outputs are saved from the worker's own memory,
        # which the harness keeps under memory_mb, and builds are far smaller. Its directory lives in RAM
        # (/dev/shm), where a file of any size would be memory no limit counted. A write past the cap fails with
        # EFBIG (Python ignores SIGXFSZ, and programs it starts inherit that).
        size = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    with contextlib.suppress(Exception):  # die with the harness (Linux only)
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Worker:
    """One sandboxed worker process. Use as a context manager; it is always killed on exit."""

    def __init__(self, cache_dir: Path, limits: Limits, extra_env: dict[str, str] | None = None,
                 server: ForkServer | None = None) -> None:
        """Start a worker: forked by `server` (a fork server of the same configuration) where one is given and
        answers, else as a fresh interpreter."""
        self.limits = limits
        self.directory = Path(tempfile.mkdtemp(prefix="kforge-worker-", dir=_fast_tmp()))
        self.log_path = self.directory / "worker.log"
        env = scrubbed_environment(extra_env or {}, self.directory)
        plan = self.path("confinement.json")
        plan.write_text(confinement_for(self.directory, writable_caches(cache_dir, env), env).to_json())
        self.confinement: dict[str, list[str]] = {}  # what the worker enforced, from its greeting
        read_fd, write_fd = os.pipe()
        self.process: subprocess.Popen[bytes] | ForkedProcess = (
            self._fork(server, env, plan, cache_dir, write_fd) if server is not None else None
        ) or self._launch(env, plan, cache_dir, write_fd)
        os.close(write_fd)
        self._replies = os.fdopen(read_fd, "rb")
        self._buffer = b""
        self.started = False

    def _launch(self, env: dict[str, str], plan: Path, cache_dir: Path, reply_fd: int) -> subprocess.Popen[bytes]:
        limits = self.limits
        with open(self.log_path, "wb") as log:
            return subprocess.Popen(
                [sys.executable, "-X", "faulthandler", "-m", "kforge.verify.worker_start", "--confine", str(plan),
                 "--", "--reply-fd", str(reply_fd), "--cache-dir", str(cache_dir)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(reply_fd,),
                cwd=self.directory, env=env, start_new_session=True,
                preexec_fn=lambda: _limit_child(limits),
            )

    def _fork(self, server: ForkServer, env: dict[str, str], plan: Path, cache_dir: Path,
              reply_fd: int) -> ForkedProcess | None:
        """The worker forked by `server`, or None when the server cannot fork one."""
        requests_read, requests_write = os.pipe()
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            process = server.spawn(self.directory, env, plan, cache_dir, requests_read, log, reply_fd)
        except ForkServerError:
            os.close(requests_write)
            return None
        finally:
            os.close(requests_read)
            os.close(log)
        process.stdin = os.fdopen(requests_write, "wb")
        return process

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def path(self, name: str) -> Path:
        return self.directory / name

    def hand_over(self, name: str, text: str) -> Path:
        """Write `text` into the worker's directory (the only user files the worker may read); its path."""
        path = self.path(name)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return path

    def start(self, timeout_s: float) -> None:
        """Wait for the worker's greeting (imports take a few seconds); WorkerFailure when there is none."""
        try:
            greeting = read_reply(self._read_line(timeout_s), Greeting)
        except MalformedReply as exc:
            self.kill()
            raise WorkerFailure("crashed", f"the worker's greeting was malformed ({exc})") from None
        if not isinstance(greeting, Greeting):
            self.kill()
            raise WorkerFailure("crashed", f"the worker did not start: {greeting.message}")
        self.confinement = greeting.confinement.model_dump()
        self.started = True

    @property
    def confined(self) -> bool:
        """Whether the kernel enforces at least part of the sandbox on this worker."""
        return bool(self.confinement.get("enforced"))

    @property
    def unconfined(self) -> list[str]:
        """One line for each kernel limit this worker could not enforce (known once started)."""
        return self.confinement.get("missing", [])

    def request(self, message: BaseModel, expected: type[ReplyT], timeout_s: float) -> ReplyT | Failure:
        """Send one request and wait for its answer: the reply `expected`, or the worker's Failure. Raises
        WorkerFailure when the worker dies or hangs, MalformedReply (the worker is killed) when what it wrote
        fits neither: a candidate shares the worker's process and may write anything."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((message.model_dump_json() + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._death() from None
        try:
            return read_reply(self._read_line(timeout_s), expected)
        except MalformedReply:
            self.kill()
            raise

    def _read_line(self, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        fd = self._replies.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerFailure("timeout", f"no answer within {timeout_s:.0f} s (the worker was killed)")
            ready, _, _ = select.select([fd], [], [], min(remaining, _MEMORY_POLL_S))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._death()
                self._buffer += chunk
            self._check_memory()
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _check_memory(self) -> None:
        if not self.limits.memory_mb or self.process.poll() is not None:
            return
        try:
            root = psutil.Process(self.process.pid)
            resident = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            return
        if resident > self.limits.memory_mb * 1024 * 1024:
            self.kill()
            raise WorkerFailure("crashed", f"exceeded the memory limit of {self.limits.memory_mb} MiB "
                                f"(resident {resident >> 20} MiB; the worker was killed)")

    def _death(self) -> WorkerFailure:
        code = self.process.wait(timeout=30)
        tail = self.log_tail()
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            what = f"the worker died of signal {name}"
        else:
            what = f"the worker exited with status {code}"
        if "MemoryError" in tail or "std::bad_alloc" in tail or "Cannot allocate memory" in tail:
            what += " after running out of memory (the worker's limit)"
        return WorkerFailure("crashed", f"{what}{_last_lines(tail)}")

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - _LOG_TAIL_BYTES))
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            if isinstance(self.process, ForkedProcess):  # forked an instant ago, maybe not yet a group leader
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        # Killed rather than asked to exit: a worker holds nothing worth flushing, and an interpreter with
        # torch loaded takes a second or two to shut down politely.
        self.kill()
        for stream in (self.process.stdin, self._replies):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]
        _remove_tree(self.directory)


class WorkerPool:
    """Keeps started workers waiting, so an evaluation does not wait for Python and torch to import.

    A worker that has run a candidate is never reused: the pool only ever hands out fresh processes, and
    starts replacements when an evaluation ends. Meant for callers that evaluate many candidates in one
    process (agents, benchmarks); a single `kforge eval` does not need one.

    On Linux the pool keeps a fork server per configuration (verify/forkserver.py): its workers are forked
    from a process that imported torch once, and each confines itself as a fresh worker does. Where the
    server cannot start or fork, or is not wanted (`_fork_server_wanted`), workers start as fresh interpreters.
    """

    def __init__(self, spares: int = 2) -> None:
        self.spares = spares
        self._waiting: dict[tuple[object, ...], list[Worker]] = {}
        self._configs: dict[tuple[object, ...], tuple[Path, Limits, dict[str, str]]] = {}
        self._servers: dict[tuple[object, ...], ForkServer | None] = {}

    def take(self, cache_dir: Path, limits: Limits, extra_env: dict[str, str]) -> Worker:
        """A started worker for this configuration: a waiting one, or a new one."""
        key = (str(cache_dir), limits, tuple(sorted(extra_env.items())))
        self._configs[key] = (cache_dir, limits, extra_env)
        waiting = self._waiting.setdefault(key, [])
        while waiting:
            worker = waiting.pop(0)
            if worker.process.poll() is None:
                return worker
            worker.close()
        return Worker(cache_dir, limits, extra_env, server=self._server(key))

    def replenish(self) -> None:
        """Start spares for every configuration taken so far. Called between evaluations, not during one:
        a spare starting would steal a core from the kernel being timed."""
        for key, (cache_dir, limits, extra_env) in self._configs.items():
            waiting = self._waiting.setdefault(key, [])
            while len(waiting) < self.spares:
                waiting.append(Worker(cache_dir, limits, extra_env, server=self._server(key)))

    def _server(self, key: tuple[object, ...]) -> ForkServer | None:
        """The configuration's fork server: started on first use; None where there is none (switched off, not
        Linux, or it died: its workers then start the plain way for the rest of the pool's life)."""
        if key not in self._servers:
            self._servers[key] = _start_fork_server(*self._configs[key])
        server = self._servers[key]
        if server is not None and not server.alive():
            server.close()
            self._servers[key] = server = None
        return server

    def settle(self, timeout_s: float = 60.0) -> None:
        """Wait until every spare has finished starting (imports done, greeting read). Called before timing:
        a spare still importing torch competes with the timed process for the CPU, and on a GPU every call's
        launch latency lands inside its device events. A spare that fails to start is dropped."""
        for waiting in self._waiting.values():
            for worker in list(waiting):
                if worker.started:
                    continue
                try:
                    worker.start(timeout_s)
                except WorkerFailure:
                    waiting.remove(worker)
                    worker.close()

    def close(self) -> None:
        for waiting in self._waiting.values():
            for worker in waiting:
                worker.close()
        self._waiting.clear()
        for server in self._servers.values():
            if server is not None:
                server.close()
                _remove_tree(server.log_path.parent)
        self._servers.clear()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_kept: list[WorkerPool] = []  # the pool `keeping_pool` holds for this process, if any


@contextlib.contextmanager
def keeping_pool(spares: int = 1) -> Iterator[WorkerPool]:
    """One pool for every run this process starts within the block (`run_pool` hands it out): a process that runs
    many problems one after another (a suite's task process) starts its fork server and spares once."""
    with WorkerPool(spares=spares) as pool:
        _kept.append(pool)
        try:
            yield pool
        finally:
            _kept.remove(pool)


def kept_pool() -> WorkerPool | None:
    """The pool `keeping_pool` holds for this process; None outside one."""
    return _kept[-1] if _kept else None


@contextlib.contextmanager
def run_pool(spares: int = 1) -> Iterator[WorkerPool]:
    """A run's pool: the process's kept one, left open at the end, or a new one closed at the end."""
    kept = kept_pool()
    if kept is not None:
        yield kept
        return
    with WorkerPool(spares=spares) as pool:
        yield pool


def _start_fork_server(cache_dir: Path, limits: Limits, extra_env: dict[str, str]) -> ForkServer | None:
    """A fork server for workers of this configuration, started with their environment and limits."""
    if not sys.platform.startswith("linux") or not _fork_server_wanted():
        return None
    directory = Path(tempfile.mkdtemp(prefix="kforge-forkserver-", dir=_fast_tmp()))
    try:
        # Counting GPUs through the CUDA runtime would make every forked child refuse CUDA; NVML does not.
        env = {**scrubbed_environment(extra_env, directory), "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        return ForkServer(env, directory, lambda: _limit_child(limits))
    except OSError:
        _remove_tree(directory)
        return None


def _fork_server_wanted() -> bool:
    """On unless `KFORGE_FORK_SERVER=0`. Forked workers were verified on an H100 (docs/harness.md, Fork server)."""
    return os.environ.get("KFORGE_FORK_SERVER", "") != "0"


def writable_caches(cache_dir: Path, env: dict[str, str]) -> list[Path]:
    """The caches a worker may write: the build cache and the compiler caches its environment names."""
    named = [Path(env[key]) for key in _CACHE_VARIABLES if env.get(key)]
    return [cache_dir, *named]


def _last_lines(text: str, count: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (":\n" + "\n".join(lines[-count:])) if lines else ""


def _fast_tmp() -> str | None:
    """A RAM-backed temporary directory where there is one: outputs travel through files."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
