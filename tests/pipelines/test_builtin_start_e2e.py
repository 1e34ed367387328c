"""In the LLM loop (`kforge optimize --model openai:...`, the builtin start on by default) the builtin engine's
kernel is the first attempt, and the model's first prompt refines it: a real subprocess, the real harness (one
C++ build), a scripted model server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.store import Store
from tests.conftest import PROBLEMS
from tests.llm.llm_servers import ScriptedServer, openai_completion, openai_stream
from tests.pipelines.test_optimize_e2e import environment, user_text

PROBLEM = PROBLEMS / "engine" / "channel_gate.py"
ADVICE = "Recommendation: split the channel loop across threads.\nReason: one thread does all the work."


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.mark.slow
def test_the_model_refines_the_builtin_engines_kernel(server: ScriptedServer, tmp_path: Path) -> None:
    # the engine's default variant, as the run will write it (the start judges one variant)
    engine_source = propose(load_problem(PROBLEM), "cpp", limit=1).variants[0].source
    # the analyst answers; the generator's reply and its repair carry no code, so nothing else is built
    server.push(openai_completion(ADVICE), openai_stream(["I would rather not."]), openai_stream(["Still no."]))
    db = tmp_path / "runs.db"
    result = subprocess.run(
        [sys.executable, "-m", "kforge", "optimize", str(PROBLEM), "--platform", "cpu", "--language", "cpp",
         "--model", "openai:test-model", "--base-url", f"{server.url}/v1", "--db", str(db), "--rounds", "1",
         "--rep-ms", "50", "--timeout", "300"],
        env=environment(OPENAI_API_KEY="sk-test-not-real"), capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]

    prompts = [user_text(r.body) for r in server.received]
    assert len(prompts) == 3
    assert engine_source in prompts[0]  # the analyst reads the engine's kernel
    assert engine_source in prompts[1] and "split the channel loop" in prompts[1]  # the generator refines it
    with Store(db) as store:
        run = store.list_runs()[0]
        attempts = store.attempts_of(run.id)
        assert [a.made_by for a in attempts] == ["builtin:generate", "generator:optimize", "generator:repair"]
        assert attempts[0].source == engine_source
        assert store.evaluation_of(attempts[0].id).outcome == "correct"  # type: ignore[union-attr]
        assert attempts[1].parent_attempt_id == attempts[0].id
    assert "best: attempt 1," in result.stdout
