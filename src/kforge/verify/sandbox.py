"""Worker processes: started with limits and a scrubbed environment, spoken to over pipes, killed when needed.

What a worker gets: its own session (so the whole process group can be killed), its own temporary
directory as working directory and HOME, an address-space limit where the platform allows one, no core
dumps, and an environment reduced to an allowlist with anything that looks like a secret removed. The
harness watches the worker's memory as well (its resident memory and the files of its directory, which lives in
RAM: verify/worker_memory.py), and kills it on a wall-clock deadline.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel

import kforge
from kforge.verify import worker_memory
from kforge.verify.forkserver import ForkedProcess, ForkServer, ForkServerError
from kforge.verify.protocol import Failure, Greeting, MalformedReply, ReplyT, read_reply
from kforge.verify.sandbox_rules import confinement_for, worker_search_path
from kforge.verify.worker_layout import BUILDS, CACHE_VARIABLES, candidate_caches

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
# The longest reply line the harness collects: a candidate shares the worker's reply channel, and a line without
# an end would otherwise grow in this process until it ran out of memory. The largest honest replies are a timing
# reply (four numbers a timed call: 13.6 KB for a round of 300 calls of 12-digit nanoseconds, the default's most)
# and a profile (one row a distinct kernel: 0.6 KB for leaky_scale on the CPU; a GPU model of a thousand kernels
# with long template names, a few KB each, stays near a few MiB).
MAX_REPLY_LINE_BYTES = 8 << 20
# Flags for every file the harness opens in a worker's directory: never through a link (the last component; the
# directory itself is reached through its descriptor), never as its controlling terminal, never inherited.
_NO_FOLLOWING = os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
# How often the harness reads the worker's resident memory while it waits. Rarely: each reading walks /proc
# and takes CPU time from the kernel being timed on the same cores; RLIMIT_AS is the hard limit meanwhile.
_MEMORY_POLL_S = 1.0


SANDBOX_HINT = ("(refused by kforge's sandbox: a candidate may write only its worker's own directory, read only "
                "the interpreter, the toolchain and that directory, start only the build tools, and has no "
                "network; see docs/harness.md#the-kernel-sandbox)")


class SandboxUnavailable(RuntimeError):
    """The kernel cannot enforce the sandbox's limits and the caller required them; one line for the user."""


class UnsafeFile(ValueError):
    """A file in a worker's directory that the harness will not read: a link, not a regular file, linked from
    elsewhere too, or larger than the caller's cap. The message says which, as the end of a sentence naming it."""


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

    def __init__(self, cache_dir: Path | None, limits: Limits, extra_env: dict[str, str] | None = None,
                 server: ForkServer | None = None) -> None:
        """Start a worker: forked by `server` (a fork server of the same configuration) where one is given and
        answers, else as a fresh interpreter.

        `cache_dir` is the shared build folder of a trusted worker (the reference's), which it may write along
        with the compiler caches `extra_env` names. A candidate's worker gets None: it builds into `builds/` and
        keeps its compiler caches under `caches/` in its own directory, whatever `extra_env` says, and may write
        nothing shared (verify/worker_layout.py); the harness keeps its builds (verify/artifact_store.py)."""
        self.limits = limits
        self.directory = Path(tempfile.mkdtemp(prefix="kforge-worker-", dir=_fast_tmp()))
        # Opened now, before the worker exists: the candidate may replace any name in its directory (the directory
        # itself it cannot), so the harness never walks a path into it again; it looks names up beneath this.
        self._directory_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOWING)
        self.log_path = self.directory / "worker.log"
        self._log_fd = self._open_log()
        own = candidate_caches(self.directory) if cache_dir is None else {}
        env = scrubbed_environment({**(extra_env or {}), **own}, self.directory)
        builds = self.directory / BUILDS if cache_dir is None else cache_dir
        plan = self.path("confinement.json")
        plan.write_text(confinement_for(self.directory, writable_caches(cache_dir, env), env,
                                        trusted=cache_dir is not None).to_json())
        self.confinement: dict[str, list[str]] = {}  # what the worker enforced, from its greeting
        read_fd, write_fd = os.pipe()
        self.process: subprocess.Popen[bytes] | ForkedProcess = (
            self._fork(server, env, plan, builds, write_fd) if server is not None else None
        ) or self._launch(env, plan, builds, write_fd)
        os.close(write_fd)
        self._replies = os.fdopen(read_fd, "rb")
        self._buffer = b""
        self.started = False

    def _open_log(self) -> int:
        """The worker's log, created afresh and kept open: the worker writes it as its stdout and stderr, and the
        harness reads its tail through this same descriptor (log_tail). A candidate that replaces the name with
        a link (to a user's file, to /dev/zero) changes only the name; what the harness reads stays the log."""
        return os.open("worker.log", os.O_RDWR | os.O_CREAT | os.O_EXCL | _NO_FOLLOWING, 0o600,
                       dir_fd=self._directory_fd)

    def _launch(self, env: dict[str, str], plan: Path, cache_dir: Path, reply_fd: int) -> subprocess.Popen[bytes]:
        limits = self.limits
        return subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "kforge.verify.worker_start", "--confine", str(plan),
             "--", "--reply-fd", str(reply_fd), "--cache-dir", str(cache_dir)],
            stdin=subprocess.PIPE, stdout=self._log_fd, stderr=subprocess.STDOUT, pass_fds=(reply_fd,),
            cwd=self.directory, env=env, start_new_session=True,
            preexec_fn=lambda: _limit_child(limits),
        )

    def _fork(self, server: ForkServer, env: dict[str, str], plan: Path, cache_dir: Path,
              reply_fd: int) -> ForkedProcess | None:
        """The worker forked by `server`, or None when the server cannot fork one."""
        requests_read, requests_write = os.pipe()
        try:
            process = server.spawn(self.directory, env, plan, cache_dir, requests_read, self._log_fd, reply_fd)
        except ForkServerError:
            os.close(requests_write)
            return None
        finally:
            os.close(requests_read)
        process.stdin = os.fdopen(requests_write, "wb")
        return process

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def path(self, name: str) -> Path:
        return self.directory / name

    @property
    def owner(self) -> tuple[int, int] | None:
        """The user and group a started worker runs as, where they are not the harness's: a worker of a root harness
        takes its directory for its own user before it leaves uid 0 (verify/worker_user.py), and whatever the
        harness puts there later is given to that user too. None where the harness's own ids own it."""
        info = os.fstat(self._directory_fd)
        return None if (info.st_uid, info.st_gid) == (os.geteuid(), os.getegid()) else (info.st_uid, info.st_gid)

    def hand_over(self, name: str, text: str) -> Path:
        """Write `text` into the worker's directory (the only user files the worker may read); its path. Whatever
        the name holds (a link a candidate planted to a user's file) is replaced, never read or written through
        (write_new_file_at); WorkerFailure when it cannot be."""
        try:
            write_new_file_at(self._directory_fd, name, text.encode(), self.owner)
        except OSError as exc:
            raise WorkerFailure("crashed", f"{name} could not be handed over to the worker "
                                           f"({exc.strerror or exc})") from None
        return self.path(name)

    def read_file(self, path: Path, cap: int) -> bytes:
        """The bytes of a file the worker wrote in its directory, read as `read_file_at` reads (no link followed,
        a regular file of one name only, at most `cap` bytes): FileNotFoundError when there is none, UnsafeFile
        when the harness will not read it."""
        if path.parent != self.directory:
            raise ValueError(f"{path} is not a file of the worker's directory {self.directory}")
        return read_file_at(self._directory_fd, path.name, cap)

    def discard(self, path: Path) -> None:
        """Remove a file of the worker's directory once read (the name itself, never what a link names): outputs
        left there would count against the worker's memory where its directory is in RAM."""
        if path.parent != self.directory:
            raise ValueError(f"{path} is not a file of the worker's directory {self.directory}")
        _check_name(path.name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.name, dir_fd=self._directory_fd)

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
        if self._unasked():
            self.kill()
            raise MalformedReply("the worker wrote a reply nobody asked for (more than one line to a request)")
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

    def _unasked(self) -> bool:
        """Whether the worker wrote anything since its last answer: one request, one line, and nothing between.
        A candidate writing on the reply channel (a forged reply ahead of the worker's own, say) is seen here
        at the latest, when the line it pushed down the queue is left over."""
        if self._buffer:
            return True
        fd = self._replies.fileno()
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            return False
        chunk = os.read(fd, 1 << 16)  # empty at the end of the stream: a dead worker, told apart by the read
        self._buffer += chunk
        return bool(chunk)

    def _read_line(self, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        fd = self._replies.fileno()
        while b"\n" not in self._buffer:
            _check_line_length(self._buffer)
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
        _check_line_length(line)
        return line

    def _check_memory(self) -> None:
        """Kill the worker once what it holds, resident or in files of its RAM-backed directory, passes its memory
        limit (verify/worker_memory.py)."""
        if not self.limits.memory_mb or self.process.poll() is not None:
            return
        held = worker_memory.held(self.process.pid, self._directory_fd)
        if held is not None and held.over(self.limits.memory_mb * 1024 * 1024):
            self.kill()
            raise WorkerFailure("crashed", f"exceeded the memory limit of {self.limits.memory_mb} MiB "
                                f"({held.describe()}; the worker was killed)")

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
        """The log's last bytes, read through the descriptor opened before the worker started (_open_log), never
        by its name, and never more than _LOG_TAIL_BYTES of them."""
        try:
            size = os.fstat(self._log_fd).st_size
            return os.pread(self._log_fd, _LOG_TAIL_BYTES, max(0, size - _LOG_TAIL_BYTES)).decode(errors="replace")
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
        for fd in (self._log_fd, self._directory_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._log_fd = self._directory_fd = -1  # closed: a second close must not close another's descriptor
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
        self._configs: dict[tuple[object, ...], tuple[Path | None, Limits, dict[str, str]]] = {}
        self._servers: dict[tuple[object, ...], ForkServer | None] = {}

    def take(self, cache_dir: Path | None, limits: Limits, extra_env: dict[str, str]) -> Worker:
        """A started worker for this configuration (`cache_dir` as for `Worker`): a waiting one, or a new one."""
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
        Linux, or it died: its workers then start the plain way for the rest of the pool's life). Configurations
        that differ only in their caches (a candidate's worker and the reference's) share one: a child takes its
        environment, plan and build folder from its own request, and the server's import costs a core for
        seconds."""
        cache_dir, limits, extra_env = self._configs[key]
        server_key = (limits, tuple(sorted((name, value) for name, value in extra_env.items()
                                           if name not in CACHE_VARIABLES)))
        if server_key not in self._servers:
            self._servers[server_key] = _start_fork_server(cache_dir, limits, extra_env)
        server = self._servers[server_key]
        if server is not None and not server.alive():
            server.close()
            self._servers[server_key] = server = None
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


def _start_fork_server(cache_dir: Path | None, limits: Limits, extra_env: dict[str, str]) -> ForkServer | None:
    """A fork server for workers of this configuration, started with their environment (without their caches:
    each child gets its own) and limits."""
    if not sys.platform.startswith("linux") or not _fork_server_wanted():
        return None
    directory = Path(tempfile.mkdtemp(prefix="kforge-forkserver-", dir=_fast_tmp()))
    try:
        # Counting GPUs through the CUDA runtime would make every forked child refuse CUDA; NVML does not.
        env = {**scrubbed_environment(extra_env, directory), "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        for variable in CACHE_VARIABLES:
            env.pop(variable, None)
        return ForkServer(env, directory, lambda: _limit_child(limits))
    except OSError:
        _remove_tree(directory)
        return None


def _fork_server_wanted() -> bool:
    """On unless `KFORGE_FORK_SERVER=0`. Forked workers were verified on an H100 (docs/harness.md, Fork server)."""
    return os.environ.get("KFORGE_FORK_SERVER", "") != "0"


def writable_caches(cache_dir: Path | None, env: dict[str, str]) -> list[Path]:
    """The caches a worker may write besides its own directory: a trusted worker's shared build folder and the
    compiler caches its environment names; none for a candidate's worker (`cache_dir` None), whose caches lie in
    its own directory."""
    if cache_dir is None:
        return []
    return [cache_dir, *(Path(env[key]) for key in CACHE_VARIABLES if env.get(key))]


def read_file_at(directory_fd: int, name: str, cap: int) -> bytes:
    """The bytes of the file `name` in the directory `directory_fd`, which a candidate may write.

    Whatever the candidate left under that name, the harness neither follows it nor waits on it nor reads it
    without end: opened with O_NOFOLLOW (a link is refused, not followed) and O_NONBLOCK (a FIFO with no writer
    opens at once, to be refused), then checked with fstat to be a regular file with no other name (a hard link
    would be a file from elsewhere) and at most `cap` bytes, then read up to the size fstat saw. FileNotFoundError
    when there is nothing; UnsafeFile, its message saying why, for anything else the harness will not read.
    """
    _check_name(name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NO_FOLLOWING, dir_fd=directory_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # what O_NOFOLLOW answers for a link (Linux; the BSDs)
            raise UnsafeFile("is a symbolic link") from None
        if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
            raise UnsafeFile("is not a regular file") from None
        raise
    try:
        info = os.fstat(fd)
        refusal = _refusal(info, cap)
        if refusal:
            raise UnsafeFile(refusal)
        return _read_exactly(fd, info.st_size)
    finally:
        os.close(fd)


def write_new_file_at(directory_fd: int, name: str, data: bytes, owner: tuple[int, int] | None = None) -> None:
    """Put `data` under `name` in the directory `directory_fd`, which a candidate may write, as a new file (given
    to `owner`, the worker's user and group, where one is named). Whatever is there is removed without being
    followed (unlink removes a link, not its target), and the file is created with O_EXCL and O_NOFOLLOW: should
    something be planted again between the two steps, the creation fails (OSError) rather than write through it."""
    _check_name(name)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory_fd)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOWING, 0o644, dir_fd=directory_fd)
    try:
        if owner is not None:
            os.fchown(fd, *owner)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _check_name(name: str) -> None:
    """A name in the directory itself: the harness looks up nothing beneath a name the candidate could make a
    directory of, or a link to one."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")


def _refusal(info: os.stat_result, cap: int) -> str | None:
    """Why the harness will not read a file of this kind and size, or None."""
    if not stat.S_ISREG(info.st_mode):
        kind = next((label for test, label in _FILE_KINDS if test(info.st_mode)), "not a regular file")
        return f"is {kind}, not a regular file"
    if info.st_nlink != 1:
        return f"has {info.st_nlink} names (a hard link to a file elsewhere)"
    if info.st_size > cap:
        return f"is larger than {cap >> 20} MiB ({info.st_size >> 20} MiB)"
    return None


def _read_exactly(fd: int, size: int) -> bytes:
    """The file's `size` bytes, as fstat saw it; UnsafeFile when it grew since (one byte more is asked for to
    tell): a worker's file is complete before its reply, and a growing one could outrun the cap."""
    chunks: list[bytes] = []
    left = size + 1
    while left > 0:
        chunk = os.read(fd, left)  # one call up to 2 GiB on Linux
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    if left == 0:
        raise UnsafeFile("grew while it was read")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _check_line_length(line: bytes) -> None:
    """MalformedReply for a reply line (or the start of one) beyond MAX_REPLY_LINE_BYTES."""
    if len(line) > MAX_REPLY_LINE_BYTES:
        raise MalformedReply(f"a reply line longer than {MAX_REPLY_LINE_BYTES >> 20} MiB")


def _last_lines(text: str, count: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (":\n" + "\n".join(lines[-count:])) if lines else ""


def _fast_tmp() -> str | None:
    """A RAM-backed temporary directory where there is one: outputs travel through files. Not one mounted
    noexec (as Docker mounts /dev/shm): a candidate's extensions are built and loaded in its worker's directory."""
    shm = Path("/dev/shm")
    try:
        runnable = not os.statvfs(shm).f_flag & getattr(os, "ST_NOEXEC", 0)
    except OSError:
        return None
    return str(shm) if runnable and shm.is_dir() and os.access(shm, os.W_OK) else None


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
