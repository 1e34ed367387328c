"""`kforge export`: a run's best solution, ready for a user's code, and the run's record.

Into the folder: `solution.py` (the best kernel; for C++/CUDA with the libraries built for this machine under
`build/`, see `bundle.py`), `run.json` (every attempt and verdict), and with an operator name `<name>_op.py` and
`problem.py` (the kernel as `torch.ops.kforge.<name>`, see `custom_op.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kforge.export.bundle import export_solution
from kforge.export.custom_op import check_operator_name, write_custom_op
from kforge.reports import run_record
from kforge.store import Store


class ExportError(ValueError):
    """The export cannot be made as asked (one line)."""


@dataclass
class ExportReport:
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def export_run(store: Store, run_id: int, out_dir: Path, *, as_op: str | None = None,
               build: bool = True) -> ExportReport:
    """Write run `run_id`'s best solution (with its build for this machine unless `build` is False), its record,
    and with `as_op` the custom operator module; ExportError when the run cannot give what was asked."""
    run = store.get_run(run_id)
    if run is None:
        raise ExportError(f"no run {run_id} in the store")
    if as_op is not None:
        check_operator_name(as_op)
    best = store.best_attempt(run_id)
    if best is None and as_op is not None:
        raise ExportError(f"run {run_id} has no correct solution to make an operator of")
    report = ExportReport()
    out_dir.mkdir(parents=True, exist_ok=True)
    if best is not None:
        solution = out_dir / "solution.py"
        if build and run.platform is not None:  # a run with no platform on record is written without a build
            exported = export_solution(best.attempt.source, run.platform, solution)
            report.written += exported.written
            if exported.note:
                report.notes.append(exported.note)
        else:
            solution.write_text(best.attempt.source)
            report.written.append(solution)
    else:
        report.notes.append(f"run {run_id} has no correct solution: only its record is written")
    if as_op is not None:
        if run.problem_path is None:
            raise ExportError(f"run {run_id} has no problem file on record; the operator needs its reference Model")
        problem = Path(run.problem_path)
        if not problem.is_file():
            raise ExportError(f"the run's problem file is gone ({problem}); the operator needs its reference Model")
        report.written += write_custom_op(as_op, out_dir, problem, run_id)
    record = out_dir / "run.json"
    record.write_text(json.dumps(run_record(store, run_id), indent=2, default=str) + "\n")
    report.written.append(record)
    return report
