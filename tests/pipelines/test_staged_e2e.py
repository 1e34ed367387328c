"""`kforge optimize --pipeline staged` end to end: a real subprocess, a scripted model on 127.0.0.1, the real
harness on the CPU.

The starting kernel (`--kernel`) is correct but runs its kernel ten times per call. The analyzer reports one
fusion issue (one stage: no planner call); the fusion stage's first try is the single-pass kernel, which is
accepted; a fresh analysis of it finds nothing more. `kforge show` prints the trial tree, and resuming the
finished run replays it from the store without asking the model or the harness again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.store import Store
from tests.conftest import CANDIDATES, PROBLEMS
from tests.llm.llm_servers import ScriptedServer, openai_completion
from tests.pipelines.test_optimize_e2e import environment, user_text

SLOW = CANDIDATES / "leaky_scale" / "loop" / "slow_correct.py"
FAST = CANDIDATES / "leaky_scale" / "honest.py"
SCRIPT = [
    json.dumps({"issues": [{"stage": "fusion", "issue": "the forward calls the kernel ten times; call it once",
                            "evidence": "ten identical calls per forward in the profile"}]}),
    "One call per forward:\n```python\n" + FAST.read_text() + "```\n",
    '{"issues": []}',
]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def kforge(*args: str, server: ScriptedServer) -> subprocess.CompletedProcess[str]:
    env = environment(OPENAI_API_KEY="sk-test-not-real", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "kforge", *args, "--base-url", f"{server.url}/v1"], env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_a_staged_run_accepts_a_faster_stage_and_reports_it(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*(openai_completion(reply) for reply in SCRIPT))
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    result = kforge("optimize", str(PROBLEMS / "leaky_scale.py"), "--platform", "cpu", "--pipeline", "staged",
                    "--kernel", str(SLOW), "--stages", "fusion,memory_access", "--retries", "1", "--model",
                    "openai:test-model", "--db", str(db), "--out", str(out), "--baseline", "eager", "--rep-ms",
                    "100", "--timeout", "60", server=server)
    assert result.returncode == 0, result.stderr[-3000:]
    prompts = [user_text(r.body) for r in server.received]
    assert len(prompts) == 3
    assert "## Profile" in prompts[0] and "- fusion:" in prompts[0] and "- memory_access:" in prompts[0]
    assert "- autotuning:" not in prompts[0]  # not selected
    assert "Stage: kernel fusion (fusion)" in prompts[1] and "call it once" in prompts[1]
    assert "for _ in range(10)" in prompts[1]  # the current kernel travels to the stage writer
    assert "fusion: accepted on try 1" in prompts[2]  # the fresh analysis knows what ran
    assert "stage fusion: accepted on try 1" in result.stderr
    assert out.read_text() == FAST.read_text()

    with Store(db) as store:
        run = store.list_runs()[0]
        assert run.status == "finished" and run.settings["pipeline"] == "staged"
        attempts = store.attempts_of(run.id)
        assert [(a.made_by, a.stage) for a in attempts] == [("user:generate", None), ("fusion:optimize", "fusion")]
        [step] = store.stages_of(run.id)
        assert (step.stage, step.status, step.input_attempt_id, step.output_attempt_id) == (
            "fusion", "accepted", attempts[0].id, attempts[1].id)
        slow, fast = (store.evaluation_of(a.id) for a in attempts)
        assert slow is not None and fast is not None and fast.runtime_ms < slow.runtime_ms / 3  # type: ignore[operator]

    shown = subprocess.run([sys.executable, "-m", "kforge", "show", "1", "--db", str(db)], capture_output=True,
                           text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0
    assert "stage 1: fusion (1 issue(s))" in shown.stdout and "share of speedup 100%" in shown.stdout
    assert "attempt 2 try 1 (fusion:optimize): correct" in shown.stdout

    resumed = kforge("optimize", "--resume", "1", "--db", str(db), server=server)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert len(server.received) == 3  # every answer replayed from the store
    with Store(db) as store:
        assert len(store.attempts_of(1)) == 2 and len(store.stages_of(1)) == 1
        assert store.get_run(1).status == "finished"  # type: ignore[union-attr]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 2  # every verdict reused
