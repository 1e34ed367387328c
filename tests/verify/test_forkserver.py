"""Workers forked by the pool's fork server (verify/forkserver.py): confined as fresh ones are, holding none of the
harness's secrets, killed and reported like any worker, and replaced by fresh interpreters where the server is
switched off or gone."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kforge.verify.evaluate import EvalOptions, evaluate
from kforge.verify.forkserver import ForkedProcess, fork_poisoned
from kforge.verify.protocol import ExitRequest
from kforge.verify.sandbox import Limits, Worker, WorkerPool
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS
from tests.verify.test_kernel_sandbox import SANDBOX_HINT, enforced, render

LEAKY = PROBLEMS / "leaky_scale.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork servers are Linux only")


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerPool]:
    monkeypatch.delenv("KFORGE_FORK_SERVER", raising=False)  # the default: on, GPU machines included
    with WorkerPool(spares=1) as workers:
        yield workers


def take(pool: WorkerPool, tmp_path: Path) -> Worker:
    worker = pool.take(tmp_path / "builds", Limits(), {})
    worker.start(120)
    return worker


def test_a_pool_forks_its_workers_from_one_server_that_holds_no_secret(
        pool: WorkerPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-planted-{secrets.token_hex(8)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    first, second = take(pool, tmp_path), take(pool, tmp_path)
    with first, second:
        assert isinstance(first.process, ForkedProcess) and isinstance(second.process, ForkedProcess)
        parents = {psutil.Process(worker.process.pid).ppid() for worker in (first, second)}
        [server] = [s for s in pool._servers.values() if s is not None]
        assert parents == {server.process.pid}
        for pid in (server.process.pid, first.process.pid):
            assert key.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        # Each worker has its own directory as home, not the server's.
        assert Path(f"/proc/{first.process.pid}/cwd").resolve() == first.directory.resolve()
        plain = Worker(tmp_path / "builds", Limits())
        with plain:
            plain.start(120)
            assert first.confinement == plain.confinement  # what the kernel enforces, alike


def test_a_forked_worker_is_killed_and_reported_like_any(pool: WorkerPool, tmp_path: Path) -> None:
    with take(pool, tmp_path) as worker:
        worker.kill()
        assert worker.process.poll() == -signal.SIGKILL
    with take(pool, tmp_path) as worker:
        assert worker.process.stdin is not None
        worker.process.stdin.write((ExitRequest().model_dump_json() + "\n").encode())
        worker.process.stdin.flush()
        assert worker.process.wait(timeout=30) == 0


def test_a_candidate_judged_in_a_forked_worker_gets_the_same_verdict(pool: WorkerPool) -> None:
    options = EvalOptions(platform="cpu", trials=1, measure=False, baselines=(), policy=POLICY_OFF)
    for name, expected in (("honest", "correct"), ("wrong_slope", "incorrect"), ("segfault", "crashed")):
        verdict = evaluate(LEAKY, CANDIDATES / "leaky_scale" / f"{name}.py", options, pool=pool)
        assert verdict.verdict == expected, verdict.reason
    assert "SIGSEGV" in verdict.reason  # the signal that ended the forked worker, as for a fresh one
    assert [server is not None for server in pool._servers.values()] == [True]


@pytest.mark.slow
@enforced
def test_a_forked_worker_is_confined_as_a_fresh_one(pool: WorkerPool, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"planted-secret-{secrets.token_hex(8)}"
    planted = tmp_path / "planted" / "credentials.txt"
    planted.parent.mkdir()
    planted.write_text(secret + "\n")
    options = EvalOptions(platform="cpu", trials=1, measure=False, baselines=())
    verdict = evaluate(LEAKY, render(tmp_path, "read_planted_file", PATH=planted), options, pool=pool)
    assert verdict.verdict == "runtime_error" and secret not in verdict.reason
    assert "opening the planted file failed: error 13" in verdict.reason and SANDBOX_HINT in verdict.reason
    key = f"sk-planted-{secrets.token_hex(12)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    verdict = evaluate(LEAKY, render(tmp_path, "parent_environment", NAME="OPENAI_API_KEY"), options, pool=pool)
    assert key not in verdict.reason
    assert "the key was in no readable process's variables" in verdict.reason


def test_workers_start_fresh_where_the_server_is_off_or_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KFORGE_FORK_SERVER", "0")
    with WorkerPool(spares=0) as pool, take(pool, tmp_path) as worker:
        assert not isinstance(worker.process, ForkedProcess)
    monkeypatch.delenv("KFORGE_FORK_SERVER")
    with WorkerPool(spares=0) as pool:
        with take(pool, tmp_path) as worker:
            assert isinstance(worker.process, ForkedProcess)
        [server] = pool._servers.values()
        assert server is not None
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        with take(pool, tmp_path) as worker:
            assert not isinstance(worker.process, ForkedProcess)
            assert worker.alive()


def test_a_process_that_never_touched_cuda_forks_usable_children() -> None:
    assert fork_poisoned() is False


@pytest.mark.gpu
def test_a_process_that_initialised_cuda_is_known_to_fork_unusable_children() -> None:
    probe = ("import torch; torch.zeros(1, device='cuda'); "
             "from kforge.verify.forkserver import fork_poisoned; print(fork_poisoned())")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "True", result.stderr


@pytest.mark.gpu
def test_a_forked_worker_judges_a_triton_kernel_on_the_gpu(pool: WorkerPool) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "gated_channel_scale"
    options = EvalOptions(platform="cuda", trials=1, baselines=())
    for _ in range(2):  # the first worker is the server's first child; the second, a spare forked meanwhile
        verdict = evaluate(example / "problem.py", example / "solution_triton.py", options, pool=pool)
        assert verdict.verdict == "correct", verdict.reason
    assert [server is not None and server.alive() for server in pool._servers.values()] == [True]
