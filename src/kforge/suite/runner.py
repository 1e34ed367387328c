"""Running a suite: every problem not already in `results.jsonl` becomes a task, each task a process of its own
(`python -m kforge.suite.task`), run on slots: one per GPU for a GPU platform (the task sees only its GPU), or
`workers` on a CPU, the cores shared between them. A finished task's row is appended at once; a task whose
process dies is run once more, then recorded with the reason. Re-running the same command continues. A task
dies with the suite (a suite killed with SIGKILL leaves no task running on).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kforge.suite.discover import FoundProblem
from kforge.suite.results import ResultsFile, SuiteRow, Summary, summarize, write_summary
from kforge.suite.task import TaskSpec

RETRIES = 1  # a task whose process died is run this many times more


@dataclass
class SuiteProgress:
    """What a suite is doing, for a live view: done and total, each slot's problem and its last event."""

    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    running: dict[str, str] = field(default_factory=dict)  # slot -> "problem: last event"
    finished: list[SuiteRow] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def eta_s(self) -> float | None:
        """Seconds left at the pace so far; None before the first problem finishes."""
        if not self.done:
            return None
        return (time.monotonic() - self.started) / self.done * (self.total - self.done)


@dataclass(frozen=True)
class Slot:
    name: str  # "cpu 1", "gpu 0"
    environment: dict[str, str]


def slots_for(platform: str, workers: int | None) -> list[Slot]:
    """Where tasks run at once: one slot per visible GPU for a GPU platform (at most `workers`), else `workers`
    CPU slots (default 1) that share the cores."""
    gpus = _visible_gpus() if platform in ("cuda", "auto") else []
    if gpus:
        chosen = gpus[:workers] if workers else gpus
        return [Slot(f"gpu {gpu}", {"CUDA_VISIBLE_DEVICES": gpu}) for gpu in chosen]
    count = max(1, workers or 1)
    threads = str(max(1, (os.cpu_count() or 1) // count))
    return [Slot(f"cpu {index}", {"OMP_NUM_THREADS": threads}) for index in range(count)]


def run_suite(problems: list[FoundProblem], make_spec: Callable[[FoundProblem], TaskSpec], out: Path,
              slots: list[Slot], on_progress: Callable[[SuiteProgress], None] | None = None,
              on_row: Callable[[SuiteRow], None] | None = None) -> list[SuiteRow]:
    """Run every problem not yet in `out/results.jsonl`; returns all rows, old and new, in the problems' order."""
    results = ResultsFile(out / "results.jsonl")
    done = results.rows()
    pending = [problem for problem in problems if not _finished(done.get(problem.name), problem)]
    progress = SuiteProgress(total=len(problems), done=len(problems) - len(pending))
    queue = list(pending)
    queue_lock = threading.Lock()

    def next_problem() -> FoundProblem | None:
        with queue_lock:
            return queue.pop(0) if queue else None

    def work(slot: Slot) -> None:
        while (problem := next_problem()) is not None:
            row = run_in_process(make_spec(problem), out, slot, progress)
            results.append(row)
            with progress.lock:
                progress.done += 1
                progress.finished.append(row)
                progress.running.pop(slot.name, None)
            if on_row:
                on_row(row)

    threads = [threading.Thread(target=work, args=(slot,), name=f"kforge-suite-{slot.name}", daemon=True)
               for slot in slots]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        if on_progress:
            on_progress(progress)
        time.sleep(0.5)
    rows = results.rows()
    return [rows[problem.name] for problem in problems if problem.name in rows]


def run_in_process(spec: TaskSpec, out: Path, slot: Slot, progress: SuiteProgress) -> SuiteRow:
    """One task in a process of its own on `slot`, retried once if the process dies without a row."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / (spec.problem.replace(os.sep, "__") + ".log")
    reason = ""
    for attempt in range(1 + RETRIES):
        with tempfile.TemporaryDirectory(prefix="kforge-suite-") as scratch:
            spec_file, row_file = Path(scratch) / "spec.json", Path(scratch) / "row.json"
            spec_file.write_text(spec.model_dump_json())
            code = _watch(spec, [sys.executable, "-m", "kforge.suite.task", str(spec_file), str(row_file), str(log)],
                          slot, log, progress)
            if row_file.exists():
                row = SuiteRow.model_validate_json(row_file.read_text())
                return row.model_copy(update={"device": slot.name, "tries": attempt + 1})
        reason = f"its process ended with status {code} before writing a result (log: {log})"
    return SuiteRow(problem=spec.problem, path=spec.path, status="error", reason=reason, device=slot.name,
                    tries=1 + RETRIES)


def _watch(spec: TaskSpec, command: list[str], slot: Slot, log: Path, progress: SuiteProgress) -> int:
    """Run the task's process to its end, keeping the slot's line of the live view up to date."""
    env = {**os.environ, **slot.environment}
    with open(log, "a") as errors:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=errors, preexec_fn=_die_with_parent)
        while process.poll() is None:
            with progress.lock:
                progress.running[slot.name] = f"{spec.problem}: {_last_line(log)}"
            time.sleep(0.5)
    return process.returncode


def _die_with_parent() -> None:
    """Runs in the task's process before exec: it gets SIGKILL when the suite's process dies (Linux)."""
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _finished(row: SuiteRow | None, problem: FoundProblem) -> bool:
    """A row that still stands: the problem file has not changed since, and it was not cut off by a lost
    process (those are tried again)."""
    if row is None:
        return False
    from kforge.problem import source_hash

    unchanged = not row.problem_hash or row.problem_hash == source_hash(problem.path.read_text())
    return unchanged and not row.reason.startswith("its process ended")


def finish(rows: Iterable[SuiteRow], out: Path) -> Summary:
    """Write summary.json, report.md and report.html for `rows`."""
    from kforge.suite.report import write_reports

    rows = list(rows)
    summary = summarize(rows)
    write_summary(summary, out / "summary.json")
    write_reports(rows, summary, out)
    return summary


def _last_line(log: Path) -> str:
    try:
        with open(log, "rb") as text:
            text.seek(0, os.SEEK_END)
            text.seek(max(0, text.tell() - 400))
            lines = [line for line in text.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:100] if lines else "starting"


def _visible_gpus() -> list[str]:
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [gpu.strip() for gpu in listed.split(",") if gpu.strip()]
    try:
        import torch

        return [str(index) for index in range(torch.cuda.device_count())]
    except Exception:
        return []
