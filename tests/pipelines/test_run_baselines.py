"""A run's baselines: the reference is timed once, kept in the store, and every timed verdict of the run (and
of its resumption) is compared with that one measurement. Real harness, real worker, the CPU platform."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kforge.pipelines.baselines import RunBaselines
from kforge.store import Store
from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Baselines, Outcome, TimingStats, Verdict
from tests.conftest import EXAMPLES, fast_options

PROBLEM = EXAMPLES / "gated_channel_scale" / "problem.py"
SOLUTION = EXAMPLES / "gated_channel_scale" / "solution_cpp.py"


def _stats(median_ms: float) -> TimingStats:
    return TimingStats(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms, max_ms=median_ms, iqr_ms=0.0,
                       repeats=10)


def test_a_verdict_takes_its_speedups_from_the_baselines_it_is_given() -> None:
    verdict = Verdict(verdict=Outcome.CORRECT, reason="ok", platform="cpu", language="cpp", runtime_ms=0.5,
                      timing=_stats(0.5), eager_ms=9.0, speedup_vs_eager=18.0, warnings=["mine"])
    compared = verdict.with_baselines(Baselines(eager=_stats(2.0), compiled=_stats(1.0), warnings=["theirs"]))
    assert compared.eager_ms == 2.0 and compared.speedup_vs_eager == pytest.approx(4.0)
    assert compared.compile_ms == 1.0 and compared.speedup_vs_compile == pytest.approx(2.0)
    assert compared.runtime_ms == 0.5 and compared.warnings == ["mine", "theirs"]
    # No compile baseline: no compile figure is left over from before.
    assert verdict.with_baselines(Baselines(eager=_stats(2.0))).speedup_vs_compile is None


def test_a_run_times_the_reference_once_and_a_resumed_run_reuses_it(tmp_path: Path) -> None:
    options = fast_options(baselines=("eager",))
    said: list[str] = []
    with Store(tmp_path / "runs.db") as store, WorkerPool(spares=1) as pool:
        run_id = store.create_run(command="optimize").id
        baselines = RunBaselines(store, run_id, PROBLEM, options, pool, lambda event: said.append(event.text))
        assert baselines.candidate_options.baselines == ()
        verdict = evaluate(PROBLEM, SOLUTION, baselines.candidate_options, pool=pool)
        # The engine's tuning budget is counted on the search clock, which stands still while the reference is
        # timed (a second or more here, in workers of its own).
        wall, search = time.monotonic(), baselines.search_clock()
        verdicts = [baselines.attach(verdict)]
        measured_s = time.monotonic() - wall
        assert measured_s > 0.5 and baselines.spent_s == pytest.approx(measured_s, abs=0.1)
        assert baselines.search_clock() - search < 0.1
        verdicts.append(baselines.attach(evaluate(PROBLEM, SOLUTION, baselines.candidate_options, pool=pool)))
        assert all(v.correct and v.runtime_ms for v in verdicts), [v.reason for v in verdicts]
        eager = verdicts[0].eager_ms
        assert eager is not None and eager > 0 and verdicts[1].eager_ms == eager
        for verdict in verdicts:
            assert verdict.runtime_ms is not None
            assert verdict.speedup_vs_eager == pytest.approx(eager / verdict.runtime_ms)
        assert sum("timing the reference once" in line for line in said) == 1
        stored = store.get_run(run_id)
        assert stored is not None and stored.baselines is not None
        assert stored.baselines["eager"]["median_ms"] == eager

        # Resumed: a new RunBaselines on the same run measures nothing and compares with the stored figure.
        resumed_said: list[str] = []
        resumed = RunBaselines(store, run_id, PROBLEM, options, pool,
                               lambda event: resumed_said.append(event.text))
        fresh = evaluate(PROBLEM, SOLUTION, resumed.candidate_options, pool=pool)
        assert fresh.eager_ms is None
        assert resumed.attach(fresh).eager_ms == eager and resumed_said == []


def test_untimed_verdicts_and_runs_without_baselines_are_left_alone(tmp_path: Path) -> None:
    untimed = Verdict(verdict=Outcome.INCORRECT, reason="mismatch", platform="cpu", language="cpp")
    with Store(tmp_path / "runs.db") as store:
        run_id = store.create_run(command="optimize").id
        asked = RunBaselines(store, run_id, PROBLEM, fast_options(baselines=("eager",)), None)
        assert asked.attach(untimed) is untimed  # nothing measured for a verdict without timing
        timed = untimed.model_copy(update={"verdict": Outcome.CORRECT, "runtime_ms": 1.0, "timing": _stats(1.0)})
        assert RunBaselines(store, run_id, PROBLEM, fast_options(), None).attach(timed) is timed
        run = store.get_run(run_id)
        assert run is not None and run.baselines is None


def test_the_analysts_timing_text_names_the_host_bound_share() -> None:
    from kforge.pipelines.optimize import timing_profile

    stats = _stats(0.05).model_copy(update={"host_bound_share": 0.8})
    verdict = Verdict(verdict=Outcome.CORRECT, reason="ok", platform="cuda", language="triton", runtime_ms=0.05,
                      timing=stats)
    assert "host-bound calls: 80%" in timing_profile(verdict).text
    cpu = verdict.model_copy(update={"timing": _stats(0.05)})  # a platform that cannot tell: no line
    assert "host-bound" not in timing_profile(cpu).text


def test_the_search_clock_stands_still_while_a_neighbour_on_the_device_times(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `kforge suite --workers` beyond the GPUs, a task waits for its device while another one times: the
    tuning budget is the search's, so that wait is not spent from it."""
    import fcntl
    import os
    import threading

    from kforge.verify.device_lock import ENV, device_lock

    lock_path = tmp_path / "gpu.lock"
    monkeypatch.setenv(ENV, str(lock_path))
    with Store(tmp_path / "runs.db") as store:
        run_id = store.create_run(command="optimize").id
        baselines = RunBaselines(store, run_id, PROBLEM, fast_options(baselines=("eager",)), None)
        neighbour = os.open(lock_path, os.O_RDWR)  # another holder of the same file: a neighbour timing
        fcntl.flock(neighbour, fcntl.LOCK_EX)
        threading.Timer(0.8, lambda: fcntl.flock(neighbour, fcntl.LOCK_UN)).start()
        wall, search = time.monotonic(), baselines.search_clock()
        with device_lock().shared():  # what evaluate takes before it builds and checks
            pass
        assert time.monotonic() - wall > 0.7
        assert baselines.search_clock() - search < 0.2
        os.close(neighbour)
        wall, search = time.monotonic(), baselines.search_clock()
        time.sleep(0.3)  # and it runs again once the device is this process's
        assert baselines.search_clock() - search == pytest.approx(time.monotonic() - wall, abs=0.05)
