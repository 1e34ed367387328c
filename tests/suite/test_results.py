"""A suite's rows and summary: fast_p, geometric means (a problem without a correct kernel counts 1.0x), the
append-only results file, and discovery of problems in folders."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kforge.suite.discover import SuiteError, find_problems
from kforge.suite.results import ResultsFile, SuiteRow, fast_p, geomean_speedup, summarize


def row(name: str, status: str = "solved", eager: float | None = None, compile_: float | None = None,
        rule: str | None = None) -> SuiteRow:
    return SuiteRow(problem=name, path=f"/p/{name}", status=status,  # type: ignore[arg-type]
                    speedup_vs_eager=eager, speedup_vs_compile=compile_, rule=rule, wall_s=2.0, attempts=3)


ROWS = [row("a", eager=4.0, compile_=2.0), row("b", eager=1.2, compile_=0.5), row("c", "unsolved", rule="static.io"),
        row("d", "error"), row("e", eager=None)]  # e: correct, but untimed


def test_fast_p_counts_correct_kernels_faster_than_p_times_the_baseline_over_all_problems() -> None:
    assert fast_p(ROWS, "eager", 0.0) == 3 / 5  # correct at all
    assert fast_p(ROWS, "eager", 1.0) == 2 / 5
    assert fast_p(ROWS, "eager", 1.5) == 1 / 5
    assert fast_p(ROWS, "compile", 1.0) == 1 / 5
    assert fast_p([], "eager", 1.0) == 0.0


def test_the_geomean_counts_a_problem_without_a_correct_timed_kernel_as_one() -> None:
    assert geomean_speedup(ROWS, "eager") == pytest.approx(math.exp((math.log(4.0) + math.log(1.2)) / 5))
    assert geomean_speedup(ROWS, "compile") == pytest.approx(math.exp((math.log(2.0) + math.log(0.5)) / 5))
    summary = summarize(ROWS)
    assert (summary.problems, summary.correct, summary.unsolved, summary.errors) == (5, 3, 1, 1)
    assert summary.fast_p["eager"]["1.5"] == 1 / 5 and set(summary.fast_p) == {"eager", "compile"}
    assert summary.slower_than_eager == [] and summary.rejections_by_rule == {"static.io": 1}
    assert summary.totals.wall_s == 10.0 and summary.totals.attempts == 15
    assert summarize([row("x", eager=0.9)]).slower_than_eager == ["x"]


def test_a_row_cut_short_by_a_kill_is_skipped_and_a_later_row_wins(tmp_path: Path) -> None:
    results = ResultsFile(tmp_path / "out" / "results.jsonl")
    results.append(row("a", "unsolved"))
    results.append(row("a", eager=2.0))
    results.append(row("b"))
    with open(results.path, "a") as file:
        file.write('{"problem": "c", "path": "/p/c", "sta')  # what a SIGKILL mid-write leaves
    rows = results.rows()
    assert set(rows) == {"a", "b"} and rows["a"].speedup_vs_eager == 2.0


PROBLEM = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n" \
          "def get_init_inputs():\n    return []\n"
SOLUTION = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_problems_are_found_in_folders_recursively_and_named_by_their_path_below_it(tmp_path: Path) -> None:
    (tmp_path / "level1" / "deep").mkdir(parents=True)
    (tmp_path / "level1" / "a.py").write_text(PROBLEM)
    (tmp_path / "level1" / "deep" / "b.py").write_text(PROBLEM)
    (tmp_path / "level1" / "solution_a.py").write_text(SOLUTION)  # not a problem
    (tmp_path / "level1" / "notes.py").write_text("x = (")  # not even Python
    (tmp_path / "single.py").write_text(PROBLEM)
    found = find_problems([tmp_path / "level1", tmp_path / "single.py", tmp_path / "level1" / "a.py"])
    assert [p.name for p in found] == ["a.py", "deep/b.py", "single.py"]  # a.py given twice: once
    with pytest.raises(SuiteError, match=r"^no such file or folder"):
        find_problems([tmp_path / "missing"])
    with pytest.raises(SuiteError, match=r"^no problem found"):
        find_problems([tmp_path / "level1" / "solution_a.py"])
