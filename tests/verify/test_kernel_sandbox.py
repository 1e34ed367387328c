"""The kernel sandbox (verify/confine.py, data/sandbox.toml) against candidates that escape through raw system
calls, which name nothing a static pattern could match: each runs through the real `kforge eval`, with the
static policy on, and each test asserts that nothing got through (no planted content or key in any output, no
proof file, nothing received by the listener) and that the verdict says the sandbox refused it.

Where this kernel has no Landlock (gVisor, an old kernel) these tests are skipped and the warning path is
tested instead (test_an_unconfinable_machine_...).
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kforge.store import Store
from kforge.verify import confine
from kforge.verify.sandbox import SANDBOX_HINT, Limits, Worker
from kforge.verify.sandbox_rules import confinement_for
from tests.conftest import CANDIDATES, PROBLEMS
from tests.llm.llm_servers import ScriptedServer, openai_stream

SANDBOX = CANDIDATES / "sandbox"
LEAKY = PROBLEMS / "leaky_scale.py"

enforced = pytest.mark.skipif(
    bool(confine.probe()) or platform.machine() != "x86_64",
    reason="needs Landlock and seccomp (the candidates' raw system calls are x86-64)")


def render(tmp_path: Path, name: str, **fill: object) -> Path:
    """The candidate `name` with its @PLACEHOLDERS@ filled in, written to tmp_path."""
    source = (SANDBOX / f"{name}.py").read_text()
    for key, value in fill.items():
        source = source.replace(f"@{key}@", str(value))
    assert "@" not in source.split('"""', 2)[2].replace("@property", ""), "a placeholder was left unfilled"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def clean_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_"))}
    if "KFORGE_CACHE_DIR" in os.environ:
        env["KFORGE_CACHE_DIR"] = os.environ["KFORGE_CACHE_DIR"]
    env.update(extra)
    return env


def kforge_eval(solution: Path, **env: str) -> tuple[dict[str, object], str]:
    """`kforge eval --json` of `solution` on leaky_scale; the verdict and everything the command printed."""
    result = subprocess.run([sys.executable, "-m", "kforge", "eval", str(LEAKY), str(solution), "--platform", "cpu",
                             "--no-timing", "--trials", "1", "--json"], capture_output=True, text=True,
                            timeout=600, env=clean_environment(**env))
    assert result.returncode == 1, result.stdout + result.stderr  # evaluated, not correct
    return json.loads(result.stdout), result.stdout + result.stderr


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, str]:
    """A file outside every path the sandbox allows, holding a secret."""
    secret = f"planted-secret-{secrets.token_hex(8)}"
    path = tmp_path / "planted" / "credentials.txt"
    path.parent.mkdir()
    path.write_text(secret + "\n")
    return path, secret


@pytest.mark.slow
@enforced
def test_a_planted_file_cannot_be_read(tmp_path: Path, planted: tuple[Path, str]) -> None:
    path, secret = planted
    verdict, printed = kforge_eval(render(tmp_path, "read_planted_file", PATH=path))
    assert secret not in printed
    assert verdict["verdict"] == "runtime_error"
    assert "opening the planted file failed: error 13" in str(verdict["reason"])  # EACCES
    assert SANDBOX_HINT in str(verdict["reason"])


@pytest.mark.slow
@enforced
def test_the_tools_environment_cannot_be_read_through_proc(tmp_path: Path) -> None:
    key = f"sk-planted-{secrets.token_hex(12)}"
    verdict, printed = kforge_eval(render(tmp_path, "parent_environment", NAME="OPENAI_API_KEY"),
                                   OPENAI_API_KEY=key)
    assert key not in printed
    # With a process namespace the parents do not even show; without one, Landlock refuses their files.
    assert "the key was in no readable process's variables" in str(verdict["reason"])


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that keeps whatever it receives."""
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                received.append(connection.recv(1024) or b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.slow
@enforced
def test_no_tcp_connection_reaches_a_listener(tmp_path: Path, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    verdict, _ = kforge_eval(render(tmp_path, "tcp_connect", PORT=port))
    time.sleep(0.5)
    assert received == []
    assert "creating the endpoint failed: error 13" in str(verdict["reason"])
    assert SANDBOX_HINT in str(verdict["reason"])


@pytest.mark.slow
@enforced
def test_a_shell_started_by_the_candidate_writes_nothing_outside(tmp_path: Path) -> None:
    """While it is imported the candidate may start programs (its build does), and Landlock keeps the shell from
    writing outside; in its forward (the run phase) fork and exec are refused outright."""
    proof = tmp_path / "proof.txt"
    verdict, _ = kforge_eval(render(tmp_path, "fork_exec_shell", PATH=proof))
    assert not proof.exists()
    # dash exits 2 when it cannot create the redirection's file
    assert "at load: the shell ended with status 2" in str(verdict["reason"])
    assert "in forward: fork failed: error 1; exec failed: error 1" in str(verdict["reason"])  # EPERM


@pytest.fixture
def unix_listener(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A Unix socket listening at a path outside every worker (a local daemon's, say), keeping what it receives."""
    path = tmp_path / "daemon.sock"
    received: list[bytes] = []
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                received.append(connection.recv(1024) or b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, received
    stop.set()
    thread.join(5)
    server.close()


@enforced
def test_the_run_phase_refuses_forks_and_unix_sockets_but_not_threads(
        tmp_path: Path, unix_listener: tuple[Path, list[bytes]]) -> None:
    """Issue 38: a Unix socket reached by its path delivered a canary to a listener outside. Once a C++ candidate
    is loaded on the CPU, its forward may start threads, but no process and no socket."""
    from kforge.problem import Solution
    from kforge.verify.evaluate import evaluate
    from tests.conftest import STATIC_OFF, fast_options

    path, received = unix_listener
    source = render(tmp_path, "run_phase_probe", SOCKET=path).read_text()
    verdict = evaluate(LEAKY, Solution.from_source(source, "cpp"), fast_options(policy=STATIC_OFF, trials=1))
    time.sleep(0.5)
    assert received == []
    assert "thread: ok; fork: error 1; connect: error 13" in verdict.reason, verdict.reason  # EPERM, EACCES


@pytest.mark.slow
@enforced
def test_an_include_of_a_planted_file_shows_none_of_it(tmp_path: Path, planted: tuple[Path, str]) -> None:
    path, secret = planted
    verdict, printed = kforge_eval(render(tmp_path, "include_planted_file", PATH=path))
    assert secret not in printed
    assert verdict["verdict"] == "compile_error"
    assert "Permission denied" in str(verdict["reason"]) and SANDBOX_HINT in str(verdict["reason"])


@pytest.mark.slow
@enforced
def test_nothing_is_written_outside_the_workers_directory(tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    verdict, _ = kforge_eval(render(tmp_path, "write_outside", PATH=target))
    assert not target.exists()
    assert "opening for writing failed: error 13" in str(verdict["reason"])


def judged(candidate: Path, **changes: object) -> str:
    """The reason of the verdict on a Python candidate (the static policy off: it needs `os`), judged as C++."""
    from kforge.verify.evaluate import evaluate
    from tests.conftest import POLICY_OFF, fast_options

    verdict = evaluate(LEAKY, candidate, fast_options(policy=POLICY_OFF, measure=False, trials=1, **changes))
    assert verdict.verdict in ("runtime_error", "crashed"), verdict.reason
    return str(verdict.reason)


@enforced
def test_a_file_of_roots_outside_the_directory_is_neither_changed_nor_joined(tmp_path: Path) -> None:
    """Issue 38: a worker left uid 0 owns root's files. Landlock refuses the write here, and a root harness's
    worker is a user of its own besides (test_worker_user.py shows that layer alone)."""
    target = tmp_path / "roots" / "root-owned.txt"
    target.parent.mkdir()
    target.write_text("root's\n")
    target.chmod(0o644)
    reason = judged(render(tmp_path, "write_root_file", PATH=target))
    assert "appending to root's file: error 13; creating beside it: error 13" in reason, reason
    assert target.read_text() == "root's\n" and not (target.parent / "planted.txt").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the process limit needs the worker's own user (a root harness)")
@enforced
def test_a_fork_bomb_stops_at_the_process_limit_and_leaves_nothing(tmp_path: Path) -> None:
    """Processes that stop themselves and stay, started while the candidate is built. No memory limit here, so
    that no watch stops it first: RLIMIT_NPROC of the worker's own user does, and they all die with the worker."""
    from kforge.verify.worker_user import DEFAULT_BASE

    reason = judged(render(tmp_path, "spawn_until_refused", MOST=10_000), memory_mb=None)
    started = re.search(r"started (\d+) processes, then error 11", reason)  # EAGAIN
    assert started and 3000 < int(started.group(1)) < 4096, reason
    deadline = time.monotonic() + 60  # killed at once, but thousands of exits take the kernel a few seconds
    while (left := [process.pid for process in psutil.process_iter(["uids", "cmdline"])
                    if process.info["uids"] and process.info["uids"].real > DEFAULT_BASE
                    and process.info["cmdline"] == ["sh", "-c", "kill -STOP $$"]]):
        assert time.monotonic() < deadline, f"{len(left)} processes of a worker's user outlived it"
        time.sleep(0.5)


@pytest.mark.slow
@enforced
def test_what_a_model_is_sent_and_the_store_keep_holds_no_secret(tmp_path: Path) -> None:
    """The threat's whole path: a model's candidate reads the key in `kforge optimize`, whose feedback would send
    it back to the model's provider and whose store would keep it."""
    key = f"sk-planted-{secrets.token_hex(12)}"
    candidate = render(tmp_path, "parent_environment", NAME="OPENAI_API_KEY").read_text()
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    with ScriptedServer() as server:
        server.push(openai_stream([f"```python\n{candidate}```"]), openai_stream(["no more ideas"]))
        result = subprocess.run(
            [sys.executable, "-m", "kforge", "optimize", str(LEAKY), "--platform", "cpu", "--model",
             "openai:test-model", "--base-url", f"{server.url}/v1", "--db", str(db), "--out", str(out),
             "--attempts", "2", "--no-builtin-start", "--baseline", "eager", "--rep-ms", "50", "--timeout", "60"],
            capture_output=True, text=True, timeout=900, env=clean_environment(OPENAI_API_KEY=key))
        sent = [json.dumps(r.body) for r in server.received]
    assert len(sent) == 2, result.stderr[-2000:]
    assert "the key was in no readable process" in sent[1]  # the failure was fed back, without the key
    assert all(key not in body for body in sent)
    assert key not in result.stdout + result.stderr
    with Store(db) as store:
        assert store.list_runs()
    dump = "\n".join(sqlite3.connect(db).iterdump())
    assert key not in dump


def test_the_rules_file_explains_every_rule() -> None:
    from kforge.verify.sandbox_rules import rules

    table = rules()
    for section in ("read", "write", "devices", "programs"):
        for rule in table[section]:  # type: ignore[union-attr]
            assert str(rule.get("why", "")).strip(), f"a {section} rule without a reason: {rule}"
    assert all(str(why).strip() for why in table["syscalls"].values())  # type: ignore[union-attr]


def test_a_workers_plan_allows_its_own_directory_and_nothing_of_home_or_tmp(tmp_path: Path) -> None:
    worker, cache = tmp_path / "worker", tmp_path / "cache"
    worker.mkdir()
    plan = confinement_for(worker, [cache], {"PATH": os.environ.get("PATH", "")})
    assert str(worker.resolve()) in plan.write and str(cache.resolve()) in plan.write
    everything = [*plan.read, *plan.write, *plan.devices, *plan.execute]
    home = str(Path.home().resolve())
    for path in everything:
        assert path not in ("/", "/tmp", home, str(Path.cwd().resolve())), path
        assert not str(tmp_path.resolve()).startswith(path + os.sep), f"{path} would expose the test's files"
    assert "ptrace" in plan.denied_syscalls and plan.allowed_socket_families == ("AF_UNIX",)


@enforced
def test_a_started_worker_reports_every_limit_enforced(tmp_path: Path) -> None:
    with Worker(tmp_path / "builds", Limits()) as worker:
        worker.start(120)
        assert worker.unconfined == []
        assert any(line.startswith("Landlock ABI") for line in worker.confinement["enforced"])
        assert "seccomp: system calls and sockets" in worker.confinement["enforced"]


class UnconfinableWorker:
    """What a worker reports on a kernel without Landlock or seccomp (gVisor, say): started, nothing enforced."""

    started = True
    confined = False
    unconfined = ("files, programs and other processes: this kernel offers no Landlock (test)",
                  "system calls and sockets: seccomp is not available (test)")


def test_an_unconfinable_machine_warns_in_the_verdict_or_refuses_when_required() -> None:
    from kforge.verify.evaluate import EvalOptions, _context, _Evaluation
    from kforge.verify.sandbox import SandboxUnavailable

    honest = CANDIDATES / "leaky_scale" / "honest.py"
    lenient = _Evaluation(_context(LEAKY, honest, EvalOptions(platform="cpu"), print, None, check_runs=False))
    lenient.ready(UnconfinableWorker())  # type: ignore[arg-type]
    lenient.ready(UnconfinableWorker())  # type: ignore[arg-type]
    assert lenient.warnings == ["sandbox not fully enforced on this machine: files, programs and other processes: "
                                "this kernel offers no Landlock (test); system calls and sockets: seccomp is not "
                                "available (test)"]
    strict = _Evaluation(_context(LEAKY, honest, EvalOptions(platform="cpu", require_sandbox=True), print, None,
                                  check_runs=False))
    with pytest.raises(SandboxUnavailable, match=r"^the sandbox cannot be enforced here: files, programs"):
        strict.ready(UnconfinableWorker())  # type: ignore[arg-type]


def test_what_comes_back_from_a_candidate_is_capped() -> None:
    from kforge.verify.verdict import MAX_REASON_CHARS, Verdict

    verdict = Verdict(verdict="runtime_error", reason="x" * 100_000, platform="cpu", language="cpp",
                      warnings=["w" * 10_000] * 100)
    assert len(verdict.reason) < MAX_REASON_CHARS + 100 and verdict.reason.endswith("more characters cut]")
    assert len(json.dumps(verdict.to_json_dict())) < 30_000


def test_ninja_is_found_where_the_package_names_no_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A virtual environment that sees the ninja package in the base interpreter's site-packages gets an empty
    `ninja.BIN_DIR`; the workers' PATH must still lead to a runnable ninja, not to a version manager's shim."""
    ninja = pytest.importorskip("ninja")
    from kforge.verify import sandbox_rules

    monkeypatch.setattr(ninja, "BIN_DIR", "")
    folders = sandbox_rules._ninja_dir()
    assert folders, "no folder holding ninja was found"
    program = Path(folders[0]) / "ninja"
    version = subprocess.run([str(program), "--version"], capture_output=True, text=True, timeout=30,
                             env={"PATH": os.defpath})
    assert version.returncode == 0 and version.stdout.strip()[0].isdigit(), version.stderr
