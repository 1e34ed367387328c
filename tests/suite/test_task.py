"""One suite task run in this process (`run_job`): its row, and the log a person reads when it went wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.suite.results import SuiteRow
from kforge.suite.task import TaskSpec, run_job
from tests.conftest import PROBLEMS


def test_a_problem_the_engine_refuses_has_the_refusal_in_its_log(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no kforge.toml of the checkout's
    spec = TaskSpec(problem="sort.py", path=str(PROBLEMS / "engine" / "ea_unsupported_sort.py"), mode="optimize",
                    model="builtin", platform="cpu", db=str(tmp_path / "runs.db"))
    spec_file, row_file, log = tmp_path / "spec.json", tmp_path / "row.json", tmp_path / "sort.py.log"
    spec_file.write_text(spec.model_dump_json())
    run_job(spec_file, row_file, log)
    row = SuiteRow.model_validate_json(row_file.read_text())
    assert row.status == "unsolved" and "cannot lower aten.sort" in row.reason
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].endswith(" s  unsolved: " + row.reason), lines
