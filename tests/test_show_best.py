"""`kforge show` names a run's best attempt honestly: the fastest timed one, or a correct one that could not
be timed on its platform (Triton in the CPU interpreter), or none."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.store import Store
from tests.test_cli import kforge


def record_run(db: Path, runtimes: list[tuple[str, float | None]]) -> int:
    """A run with one attempt per (outcome, runtime) pair, in order."""
    with Store(db) as store:
        run = store.create_run(command="optimize", platform="cpu", language="triton", model="openai:m")
        for number, (outcome, runtime_ms) in enumerate(runtimes):
            attempt = store.record_attempt(run.id, source=f"class ModelNew: pass  # {number}", language="triton",
                                           platform="cpu", made_by="generator:generate", round=0)
            store.record_evaluation(attempt.id, {"verdict": outcome, "runtime_ms": runtime_ms})
        return run.id


@pytest.mark.parametrize(("runtimes", "line"), [
    ([("incorrect", None), ("correct", None), ("correct", None)],
     "best: attempt 2, correct (not timed on this platform)"),
    ([("correct", None), ("correct", 2.0), ("correct", 1.5)], "best: attempt 3, 1.5 ms"),
    ([("incorrect", None), ("compile_error", None)], "best: none correct"),
])
def test_show_reports_the_best_attempt(tmp_path: Path, runtimes: list[tuple[str, float | None]], line: str) -> None:
    db = tmp_path / "runs.db"
    run_id = record_run(db, runtimes)
    shown = kforge("show", str(run_id), "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert line in shown.stdout.splitlines()


def test_the_untimed_best_is_exported(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = record_run(db, [("incorrect", None), ("correct", None)])
    exported = kforge("export", str(run_id), "--db", db, "--out", tmp_path / "out")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "out" / "solution.py").read_text() == "class ModelNew: pass  # 1"


@pytest.mark.parametrize("with_llm", [False, True], ids=["builtin", "llm"])
def test_the_attempts_table_fits_80_columns_with_whole_figures(tmp_path: Path, with_llm: bool) -> None:
    from rich.console import Console

    from kforge.reports import attempts_table

    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize", platform="cpu", language="cpp", model="builtin")
        for number, runtime_ms in enumerate((12.3456, 0.2945)):
            attempt = store.record_attempt(run.id, source=f"class ModelNew: pass  # {number}", language="cpp",
                                           platform="cpu", made_by="builtin:generate")
            usage = {"llm_usage": {"prompt_tokens": 1200, "completion_tokens": 800, "cost_usd": 0.0123}}
            store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": runtime_ms,
                                                 "speedup_vs_eager": 105.26, "speedup_vs_compile": 1.56,
                                                 **(usage if with_llm else {})})
        console = Console(width=80, record=True, color_system=None)
        console.print(attempts_table(store, run.id))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    for figure in ("12.35 ms", "0.2945 ms", "105.26x", "1.56x", "builtin", "correct"):
        assert figure in text, text
    assert ("2.0k $0.012" in text) is with_llm


def test_a_best_slower_than_a_baseline_is_said_plainly() -> None:
    from kforge.reports import best_line

    assert "SLOWER than PyTorch eager" in best_line(3, 1.2, vs_eager=0.89, vs_compile=1.4)
    assert "SLOWER" not in best_line(3, 1.2, vs_eager=1.3, vs_compile=1.1)
    assert "SLOWER than PyTorch eager and torch.compile" in best_line(3, 1.2, vs_eager=0.5, vs_compile=0.4)


def test_a_best_within_the_noise_of_others_says_so(tmp_path: Path) -> None:
    from kforge.reports import stored_best_line

    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize", platform="cpu", language="cpp", model="builtin")
        for number, (runtime, iqr) in enumerate([(16.81, 2.0), (15.99, 0.9), (30.0, 0.5)]):
            attempt = store.record_attempt(run.id, source=f"# {number}", language="cpp", platform="cpu",
                                           made_by="builtin")
            store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": runtime,
                                                 "timing": {"iqr_ms": iqr}})
        line = stored_best_line(store, run.id)
    assert line.startswith("best: attempt 2, 15.99 ms") and line.endswith("; attempt 1 is within its noise")


def test_a_second_runs_attempts_are_numbered_from_one_wherever_they_are_shown(tmp_path: Path) -> None:
    import json

    db = tmp_path / "runs.db"
    record_run(db, [("incorrect", None), ("correct", 3.0), ("correct", 2.0)])  # run 1: rows 1-3
    with Store(db) as store:
        run = store.create_run(command="optimize", platform="cpu", language="cpp", model="builtin")
        ids = []
        for number, runtime_ms in enumerate((2.0, 1.0, 1.01)):
            attempt = store.record_attempt(run.id, source=f"# {number}", language="cpp", platform="cpu",
                                           made_by="builtin:generate", parent_attempt_id=ids[0] if ids else None)
            store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": runtime_ms,
                                                 "timing": {"iqr_ms": 0.1}})
            ids.append(attempt.id)
        store.record_best(run.id, ids[1])
        store.record_confirmation(run.id, ids[1], {"verdict": "incorrect", "reason": "flaky", "platform": "cpu",
                                                   "language": "cpp"})
    assert ids == [4, 5, 6]  # the row ids go on from run 1; what people see must not

    shown = kforge("show", str(run.id), "--db", db)
    assert shown.returncode == 0, shown.stderr
    numbered = [line.split()[0] for line in shown.stdout.splitlines() if "builtin:generate" in line]
    assert numbered == ["1", "2", "3"]
    best = "best: attempt 2, 1 ms; judged again at the end: incorrect: flaky; attempt 3 is within its noise"
    assert best in " ".join(shown.stdout.split())  # the line as rich wraps it, joined again

    listed = [json.loads(line) for line in kforge("runs", "--db", db, "--json").stdout.splitlines()]
    assert [(row["run"], row["best_attempt"]) for row in listed] == [(2, 2), (1, 3)]

    exported = kforge("export", str(run.id), "--db", db, "--out", tmp_path / "out")
    assert exported.returncode == 0, exported.stderr
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    assert record["best_attempt"] == 2 and record["confirmation"]["attempt"] == 2
    assert [(a["number"], a["id"], a["parent"]) for a in record["attempts"]] == [(1, 4, None), (2, 5, 1), (3, 6, 1)]
    assert (tmp_path / "out" / "solution.py").read_text() == "# 1"


def test_a_run_without_a_platform_is_shown_without_one(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        bare = store.create_run(command="eval", model=None).id
        targeted = store.create_run(command="optimize", platform="cpu", language="cpp", model="builtin").id
    [bare_line] = kforge("show", str(bare), "--db", db).stdout.splitlines()[:1]
    [targeted_line] = kforge("show", str(targeted), "--db", db).stdout.splitlines()[:1]
    assert bare_line.startswith("run 1: eval with -") and "None" not in bare_line
    assert targeted_line.startswith("run 2: optimize on cpu/cpp with builtin")


def test_a_speedup_is_shown_with_its_interval_and_never_called_faster_when_it_holds_one() -> None:
    from kforge.reports import best_line

    line = best_line(3, 1.0, 1.9, 1.04, confirmed=True, eager_interval=(1.62, 2.31), compile_interval=(0.97, 1.12))
    assert "1.90x (1.62-2.31) vs eager, 1.04x (0.97-1.12) vs torch.compile" in line
    assert "not shown faster than torch.compile" in line and "SLOWER" not in line
    # Below 1.0 but within noise: neither SLOWER nor faster; wholly below 1.0: SLOWER.
    even = best_line(3, 1.0, 0.98, None, eager_interval=(0.9, 1.05))
    assert "SLOWER" not in even and "not shown faster than PyTorch eager" in even
    assert "SLOWER than PyTorch eager" in best_line(3, 1.0, 0.8, None, eager_interval=(0.75, 0.86))
    assert "busy machine" in best_line(3, 1.0, 1.5, None, eager_interval=(1.4, 1.6), busy="the machine was busy")
    assert "busy" not in best_line(3, 1.0, 1.5, None)
