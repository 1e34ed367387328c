"""Building an optimize request: what a user asked for, checked once, with one error type whose message is one
line; the same checks for every command that optimizes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kforge.llm.budget import Budget
from kforge.pipelines.request import (
    BUILTIN,
    OptimizeError,
    ResumeChanges,
    build_request,
    resume_request,
    resumed_budget,
    start_run,
)
from kforge.store import Store
from kforge.verify.evaluate import EvalOptions
from tests.conftest import CANDIDATES, PROBLEMS

LEAKY = PROBLEMS / "leaky_scale.py"
HONEST = CANDIDATES / "leaky_scale" / "honest.py"


def test_the_builtin_engine_gets_a_language_it_writes_and_a_model_gets_the_platforms_first() -> None:
    engine = build_request(LEAKY, model=None, platform="cpu")
    assert engine.model == BUILTIN and engine.language == "cpp" and engine.pipeline == "loop"
    chosen = build_request(LEAKY, model="openai:some-model", platform="cpu", language="triton")
    assert chosen.language == "triton" and chosen.model == "openai:some-model"


@pytest.mark.parametrize(("changes", "message"), [
    ({"pipeline": "magic"}, "unknown pipeline 'magic'; choose loop or staged"),
    ({"stages": "fusion"}, "--kernel and --stages belong to the staged pipeline: add --pipeline staged"),
    ({"platform": "abacus"}, "abacus"),
    ({"language": "cuda"}, "platform cpu does not run cuda candidates"),
    ({"pipeline": "staged"}, "the builtin engine runs on its own"),
    ({"pipeline": "staged", "model": "openai:m", "stages": "no-such-stage"}, "no-such-stage"),
    ({"reference": Path("missing.py")}, "solution file not found: missing.py"),
])
def test_a_request_that_cannot_run_is_one_error_with_one_line(changes: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"model": None, "platform": "cpu", **changes}
    with pytest.raises(OptimizeError) as caught:
        build_request(LEAKY, **arguments)  # type: ignore[arg-type]
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_problem_is_the_same_error(tmp_path: Path) -> None:
    with pytest.raises(OptimizeError, match="problem file not found"):
        build_request(tmp_path / "nothing.py", model=None, platform="cpu")


def test_a_recorded_request_is_read_back_the_same_for_a_resume(tmp_path: Path) -> None:
    options = EvalOptions(trials=1, baselines=("eager",))
    request = build_request(LEAKY, model="openai:m", platform="cpu", pipeline="staged", kernel=HONEST,
                            stages="fusion", eval_options=options, allow_vendor_gemm=True, send_images=True)
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, request)
        again = resume_request(store, run_id, options)
    assert again.pipeline == "staged" and again.staged.stages == request.staged.stages == ("fusion",)
    assert again.kernel == HONEST and again.allow_vendor_gemm and again.send_images
    assert again.evaluation_options().policy.vendor_gemm


def test_a_resume_keeps_where_the_best_goes_its_bar_and_server_whatever_the_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    request = build_request(LEAKY, model="openai:m", platform="cpu", out=Path("best.py"), min_speedup=1.5,
                            base_url="http://127.0.0.1:8000/v1")
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, request)
        monkeypatch.chdir(LEAKY.parent)  # a resume from elsewhere: the record holds whole paths
        again = resume_request(store, run_id, EvalOptions(), base_url="http://other:1/v1")
    assert again.out == tmp_path / "best.py" and again.min_speedup == 1.5
    assert again.base_url == "http://127.0.0.1:8000/v1"  # the recorded server, not today's setting


def test_a_resume_says_what_it_changes_and_may_only_tighten_the_sandbox(tmp_path: Path) -> None:
    recorded = build_request(LEAKY, model=None, platform="cpu", out=tmp_path / "best.py", time_budget_s=60.0)
    changes = ResumeChanges(out=tmp_path / "other.py", time_budget_s=60.0, min_speedup=2.0, require_sandbox=True)
    resumed = changes.applied_to(recorded)
    assert resumed.out == tmp_path / "other.py" and resumed.min_speedup == 2.0
    assert resumed.eval_options.require_sandbox and resumed.loop == recorded.loop
    # Only a recorded setting that is replaced is said: the same time budget, or a bar the run had none of, is not.
    assert changes.notes(recorded) == [f"--out {tmp_path / 'other.py'} for this resume (the run recorded "
                                       f"{tmp_path / 'best.py'})"]
    assert ResumeChanges().applied_to(recorded) == recorded


def test_a_resume_keeps_the_budget_it_started_with_unless_one_is_set_again(tmp_path: Path) -> None:
    request = build_request(LEAKY, model="openai:m", platform="cpu")
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, request, Budget(max_usd=2.0, max_calls=10))
        kept = resumed_budget(store, run_id, Budget())
        assert (kept.max_usd, kept.max_calls, kept.max_tokens) == (2.0, 10, None)
        raised = resumed_budget(store, run_id, Budget(max_usd=5.0))
        assert (raised.max_usd, raised.max_calls) == (5.0, 10)


def test_a_record_from_an_earlier_kforge_resumes_with_todays_server_setting(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, build_request(LEAKY, model="openai:m", platform="cpu"))
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        [settings] = conn.execute("SELECT settings_json FROM runs").fetchone()
        record = {k: v for k, v in json.loads(settings).items() if k not in ("base_url", "out", "min_speedup")}
        conn.execute("UPDATE runs SET settings_json = ?", (json.dumps(record),))
    with Store(tmp_path / "runs.db") as store:
        again = resume_request(store, run_id, EvalOptions(), base_url="http://127.0.0.1:9/v1")
    assert again.base_url == "http://127.0.0.1:9/v1" and again.out is None and again.min_speedup is None


def test_a_resume_whose_problem_file_is_gone_is_one_line(tmp_path: Path) -> None:
    problem = tmp_path / "problem.py"
    problem.write_text(LEAKY.read_text())
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, build_request(problem, model=None, platform="cpu"))
        problem.unlink()
        with pytest.raises(OptimizeError, match=f"run {run_id} started with {problem}, which is not there any more"):
            resume_request(store, run_id, EvalOptions())
