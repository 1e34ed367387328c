"""A run's best is judged again when the run ends, with the reference timed in turn beside it; the run keeps that
verdict and its reports show it. Real harness, real workers, the CPU platform."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kforge.agents.feedback import AttemptOutcome
from kforge.pipelines.confirm import confirm_best
from kforge.pipelines.judging import AttemptRecord
from kforge.problem import load_problem
from kforge.reports import run_record, stored_best_line
from kforge.store import Store
from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import WorkerPool
from tests.conftest import CANDIDATES, PROBLEMS, fast_options

PROBLEM = PROBLEMS / "leaky_scale.py"
HONEST = CANDIDATES / "leaky_scale" / "honest.py"
WRONG = CANDIDATES / "leaky_scale" / "wrong_slope.py"


def _run_with_a_best(store: Store) -> tuple[int, AttemptRecord]:
    """A run whose one attempt (the honest candidate) was judged correct and chosen as its best."""
    run_id = store.create_run(command="optimize").id
    attempt = store.record_attempt(run_id, source=HONEST.read_text(), language="cpp", platform="cpu",
                                   made_by="test")
    verdict = evaluate(PROBLEM, HONEST, fast_options())
    assert verdict.correct, verdict.reason
    store.record_evaluation(attempt.id, verdict.model_dump(mode="json"))
    store.record_best(run_id, attempt.id)
    return run_id, AttemptRecord(attempt_id=attempt.id, number=attempt.number, phase="generate", round=0,
                                 outcome=AttemptOutcome.CORRECT, source=attempt.source, verdict=verdict, note="")


def test_the_best_is_judged_again_beside_the_reference_and_reports_show_it(tmp_path: Path) -> None:
    said: list[str] = []
    with Store(tmp_path / "runs.db") as store, WorkerPool(spares=1) as pool:
        run_id, best = _run_with_a_best(store)
        again = confirm_best(store, run_id, load_problem(PROBLEM), best, fast_options(baselines=("eager",)), pool,
                             lambda event: said.append(event.text))
        assert again is not None and again.correct, again
        assert again.eager_ms is not None and again.speedup_vs_eager is not None
        assert any("confirming the best" in line for line in said)
        run = store.get_run(run_id)
        assert run is not None and run.confirmation is not None
        assert run.confirmation["attempt_id"] == best.attempt_id
        assert run.confirmation["verdict"]["eager_ms"] == again.eager_ms
        line = stored_best_line(store, run_id)
        interval = again.speedup_vs_eager_interval  # eager was timed in turn with it: the speedup has its interval
        assert interval is not None and interval[0] <= again.speedup_vs_eager <= interval[1]
        shown = f"{again.speedup_vs_eager:.2f}x ({interval[0]:.2f}-{interval[1]:.2f}) vs eager"
        assert "judged again at the end" in line and shown in line, line
        assert run_record(store, run_id)["confirmation"]["verdict"]["verdict"] == "correct"


def test_a_best_failing_the_second_time_is_reported_and_no_baselines_means_no_second_time(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_id, best = _run_with_a_best(store)
        assert confirm_best(store, run_id, load_problem(PROBLEM), best, fast_options(), None) is None
        run = store.get_run(run_id)
        assert run is not None and run.confirmation is None
        # The best now computes something else: the second judgement says so, and so does the best line.
        changed = replace(best, source=WRONG.read_text())
        again = confirm_best(store, run_id, load_problem(PROBLEM), changed, fast_options(baselines=("eager",)), None)
        assert again is not None and not again.correct
        line = stored_best_line(store, run_id)
        assert f"judged again at the end: {again.verdict}" in line and "vs eager" not in line
