"""`kforge optimize` end to end: a real subprocess, a scripted model server on 127.0.0.1, the real harness.

The script: the first reply does not build, the second builds but is wrong, the third is correct but slow,
the analyst recommends, and the fourth (the recommendation applied) is faster and becomes the best.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.store import Store
from tests.conftest import CANDIDATES, PROBLEMS
from tests.llm.llm_servers import (
    Scripted,
    ScriptedServer,
    anthropic_message,
    anthropic_stream,
    openai_completion,
    openai_stream,
)

LOOP = CANDIDATES / "leaky_scale" / "loop"
REPLIES = {
    "broken": "My kernel:\n```python\n" + (CANDIDATES / "leaky_scale" / "compile_error.py").read_text() + "```",
    "wrong": "```python\n" + (LOOP / "ignores_scale.py").read_text() + "```",
    "slow": "Fixed the scale.\n\n```python\n" + (LOOP / "slow_correct.py").read_text() + "```\nIt passes now.",
    "analysis": "Recommendation: call the kernel once per forward instead of ten times.\n"
                "Reason: the profile shows the kernel's time is ten times a single pass.",
    "fast": "```python\n" + (CANDIDATES / "leaky_scale" / "honest.py").read_text() + "```",
}
ORDER = ["broken", "wrong", "slow", "analysis", "fast"]


def pieces(text: str, size: int = 300) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def openai_reply(name: str) -> Scripted:
    """Generation replies stream (the loop shows progress); the analyst's does not."""
    return openai_completion(REPLIES[name]) if name == "analysis" else openai_stream(pieces(REPLIES[name]))


def anthropic_reply(name: str) -> Scripted:
    return anthropic_message(REPLIES[name]) if name == "analysis" else anthropic_stream(pieces(REPLIES[name]))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def optimize_command(db: Path, model: str, base_url: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "kforge", "optimize", str(PROBLEMS / "leaky_scale.py"), "--platform", "cpu",
            "--model", model, "--base-url", base_url, "--db", str(db), "--out", str(out), "--rounds", "1",
            "--attempts", "4", "--baseline", "eager", "--rep-ms", "100", "--timeout", "60",
            "--no-builtin-start"]  # the scripted replies start from scratch (the engine's start: test_builtin_e2e)


def environment(**keys: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_"))}
    env.update(keys)
    # One OpenMP thread: with the suite running on every core, two-thread kernels spend their time waiting
    # for each other, and the test's 10x speed difference would drown in that noise.
    env["OMP_NUM_THREADS"] = "1"
    if "KFORGE_CACHE_DIR" in os.environ:
        env["KFORGE_CACHE_DIR"] = os.environ["KFORGE_CACHE_DIR"]
    return env


def user_text(body: dict) -> str:
    """The text of the last user message, whichever API shape it came in."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content)


def check_run(db: Path, out: Path, bodies: list[dict]) -> None:
    prompts = [user_text(body) for body in bodies]
    assert len(prompts) == 5
    assert "Write a C++ (OpenMP) implementation" in prompts[0]
    assert "class Model(nn.Module)" in prompts[0]  # the problem travels to the model
    assert "kforge_example_bias_clamp" in prompts[0]  # and so does the single-shot example
    assert "did not compile" in prompts[1] and "error" in prompts[1]  # compiler lines carried back
    assert "does not match the reference" in prompts[2] and "max abs error" in prompts[2]
    assert "## Profile" in prompts[3] and "ext.leaky_scale" in prompts[3]  # the analyst sees kernel + profile
    assert "leaky_scale" in prompts[3].split("## Profile")[1]  # the extension's function is a profile row
    assert "roofline" in prompts[3].split("## Profile")[1].lower()
    assert "call the kernel once per forward" in prompts[4]  # the recommendation reaches the generator

    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.status == "finished"
        attempts = store.attempts_of(run.id)
        outcomes = [store.evaluation_of(a.id).outcome for a in attempts]  # type: ignore[union-attr]
        assert outcomes == ["compile_error", "incorrect", "correct", "correct"]
        assert [a.made_by for a in attempts] == ["generator:generate", "generator:repair", "generator:repair",
                                                 "generator:optimize"]
        assert attempts[3].parent_attempt_id == attempts[2].id
        best = store.best_attempt(run.id)
        assert best is not None and best.attempt.id == attempts[3].id
        slow = store.evaluation_of(attempts[2].id)
        assert slow is not None and slow.runtime_ms is not None and best.evaluation.runtime_ms is not None
        assert best.evaluation.runtime_ms < slow.runtime_ms
        assert store.costs_of(run.id).calls == 5
        profiles = store.profiles_of(attempts[2].id)
        assert profiles and profiles[0].png is not None and profiles[0].png.startswith(b"\x89PNG")
        assert out.read_text() == best.attempt.source  # the loop accepted it, and it is also the fastest
        assert "kforge" not in out.read_text().replace("kforge_test", "")  # standalone: no kforge import


@pytest.mark.slow
def test_optimize_with_an_openai_compatible_server(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*(openai_reply(name) for name in ORDER))
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    result = subprocess.run(optimize_command(db, "openai:test-model", f"{server.url}/v1", out),
                            env=environment(OPENAI_API_KEY="sk-test-not-real"), capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "new best" in result.stderr or "best: attempt" in result.stdout
    check_run(db, out, [r.body for r in server.received])
    assert all(r.body["model"] == "test-model" for r in server.received)

    shown = subprocess.run([sys.executable, "-m", "kforge", "show", "1", "--db", str(db)], capture_output=True,
                           text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0 and "compile_error" in shown.stdout and "best: attempt 4" in shown.stdout
    exported = subprocess.run([sys.executable, "-m", "kforge", "export", "1", "--db", str(db), "--out",
                               str(tmp_path / "export"), "--no-build"], capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0
    record = json.loads((tmp_path / "export" / "run.json").read_text())
    assert record["best_attempt"] == 4 and len(record["attempts"]) == 4
    assert (tmp_path / "export" / "solution.py").read_text() == out.read_text()


@pytest.mark.slow
def test_optimize_with_an_anthropic_compatible_server(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*(anthropic_reply(name) for name in ORDER))
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    result = subprocess.run(optimize_command(db, "anthropic:test-claude", server.url, out),
                            env=environment(ANTHROPIC_API_KEY="sk-ant-test-not-real"), capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert all(r.path.endswith("/v1/messages") for r in server.received)
    check_run(db, out, [r.body for r in server.received])


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_without_losing_or_redoing_work(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    # The third reply hangs, so the run is killed while it waits: two attempts are judged by then.
    hanging = openai_reply("slow")
    hanging.delay_s = 120
    server.push(openai_reply("broken"), openai_reply("wrong"), hanging)
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    env = environment(OPENAI_API_KEY="sk-test-not-real")
    process = subprocess.Popen(optimize_command(db, "openai:test-model", f"{server.url}/v1", out), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and len(server.received) < 3:
            time.sleep(0.5)
        assert len(server.received) == 3, "the run never reached its third request"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.status == "interrupted"  # killed: nobody marked it, and its process is gone
        assert len(store.attempts_of(run.id)) == 2 and len(store.evaluated_attempt_ids(run.id)) == 2

    server.push(*(openai_reply(name) for name in ("slow", "analysis", "fast")))
    resumed = subprocess.run([sys.executable, "-m", "kforge", "optimize", "--resume", str(run.id), "--db", str(db),
                              "--out", str(out), "--base-url", f"{server.url}/v1"], env=env, capture_output=True,
                             text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert len(server.received) == 6, "the two answered requests must come from the store, not the server"
    with Store(db) as store:
        attempts = store.attempts_of(run.id)
        assert len(attempts) == 4
        assert len({a.source_hash for a in attempts}) == 4
        assert store.get_run(run.id).status == "finished"  # type: ignore[union-attr]
        calls = store.llm_calls_of(run.id)
        assert sum(c.cache_hit for c in calls) == 2
    check_run(db, out, [r.body for r in server.received][:2] + [r.body for r in server.received][3:])
