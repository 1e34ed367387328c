"""run_suite with fake slots: what a suite run again keeps from results.jsonl, and says it kept."""

from __future__ import annotations

from pathlib import Path

from kforge.suite.discover import FoundProblem
from kforge.suite.results import ResultsFile, SuiteRow
from kforge.suite.runner import SlotRunner, run_suite
from tests.suite.test_admission import FakeSlot, Running, spec


def test_a_suite_run_again_says_how_many_rows_it_kept_and_runs_only_the_rest(tmp_path: Path) -> None:
    problems = [FoundProblem(name, tmp_path / name) for name in ("a.py", "b.py", "c.py")]
    for problem in problems:
        problem.path.write_text("# a problem\n")
    out = tmp_path / "out"
    out.mkdir()
    results = ResultsFile(out / "results.jsonl")
    for name in ("a.py", "b.py"):
        results.append(SuiteRow(problem=name, path=str(tmp_path / name), status="solved"))
    running, notes = Running(), list[str]()
    runners: list[SlotRunner] = [FakeSlot("cpu 0", None, running, seconds=0.0)]
    rows = run_suite(problems, spec, out, runners, on_note=notes.append)
    assert running.started == ["c.py"] and [row.problem for row in rows] == ["a.py", "b.py", "c.py"]
    assert notes == [f"resumed: 2 of 3 problems kept from {out / 'results.jsonl'}, 1 to run"]


def test_a_first_run_says_nothing_of_kept_rows(tmp_path: Path) -> None:
    problems = [FoundProblem("a.py", tmp_path / "a.py")]
    problems[0].path.write_text("# a problem\n")
    notes: list[str] = []
    run_suite(problems, spec, tmp_path / "out", [FakeSlot("cpu 0", None, Running(), seconds=0.0)],
              on_note=notes.append)
    assert notes == []
