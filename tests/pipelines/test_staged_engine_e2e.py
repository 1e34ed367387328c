"""`kforge optimize --pipeline staged --stages autotuning` end to end on the CPU with Triton in the interpreter:
a real subprocess, a scripted model on 127.0.0.1, the real harness. The builtin engine's variants are judged
as try 0 of the autotuning stage; in the interpreter nothing is timed, so none can be shown faster than the
starting kernel and the model's try runs too. `kforge show` names the correct, untimed start as the best."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.pipelines.builtin import default_variants
from kforge.problem import load_problem
from kforge.store import Store
from tests.conftest import PROBLEMS
from tests.llm.llm_servers import ScriptedServer, openai_completion
from tests.pipelines.test_staged_e2e import kforge, server  # noqa: F401  (the fixture)

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

PROBLEM = PROBLEMS / "engine" / "channel_gate.py"
ISSUES = json.dumps({"issues": [{"stage": "autotuning", "issue": "the tile is fixed", "evidence": "source"}]})


@pytest.mark.slow  # about 30 s of Triton interpreter
def test_the_engine_tries_the_autotuning_stage_through_the_harness(server: ScriptedServer,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    problem = load_problem(PROBLEM)
    engine = [v.source for v in propose(problem, "triton", limit=default_variants("cpu", "triton")).variants]
    # the starting kernel: a correct engine variant the stage's search does not offer
    start = next(v.source for v in propose(problem, "triton", limit=12).variants if v.source not in engine)
    kernel = tmp_path / "start.py"
    kernel.write_text(start)
    server.push(openai_completion(ISSUES), openai_completion("No code from me this time."))
    db = tmp_path / "runs.db"
    result = kforge("optimize", str(PROBLEM), "--platform", "cpu", "--language", "triton", "--pipeline", "staged",
                    "--kernel", str(kernel), "--stages", "autotuning", "--retries", "0", "--model",
                    "openai:test-model", "--db", str(db), "--timeout", "120", server=server)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(server.received) == 2  # the analyzer, then the stage writer's one try
    with Store(db) as store:
        run = store.list_runs()[0]
        attempts = store.attempts_of(run.id)
        assert [a.made_by for a in attempts] == ["user:generate", *["builtin:optimize"] * len(engine),
                                                 "autotuning:optimize"]
        assert [a.source for a in attempts[1:-1]] == engine
        assert all(a.stage == "autotuning" and a.parent_attempt_id == attempts[0].id for a in attempts[1:])
        outcomes = [store.evaluation_of(a.id).outcome for a in attempts]  # type: ignore[union-attr]
        assert outcomes[:-1] == ["correct"] * (len(engine) + 1)  # correct, but untimed in the interpreter
        [step] = store.stages_of(run.id)
        assert step.status == "skipped" and step.detail["tries"] == len(engine) + 1

    shown = subprocess.run([sys.executable, "-m", "kforge", "show", str(run.id), "--db", str(db)],
                           capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert f"best: attempt {attempts[0].id}, correct (not timed on this platform)" in shown.stdout
    assert "try 0 (builtin:optimize): correct" in shown.stdout
