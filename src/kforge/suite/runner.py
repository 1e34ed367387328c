"""Running a suite: every problem not already in `results.jsonl` becomes a task, run on slots: one per GPU for a
GPU platform (the task sees only its GPU), or `workers` on a CPU, the cores shared between them. Each slot keeps
a task process of its own (`task_process.py`) that runs its tasks one after another. A finished task's row is
appended at once; a task whose process dies is run once more (in a fresh process), then recorded with the
reason. Re-running the same command continues. Task processes die with the suite (a suite killed with SIGKILL
leaves none running on). Slots that share a GPU start a problem there only once its estimated memory fits beside
what runs there (`admission.py`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kforge.suite.admission import GpuMemory
from kforge.suite.discover import FoundProblem
from kforge.suite.memory import GB, Estimate
from kforge.suite.results import ResultsFile, SuiteRow, Summary, summarize, write_summary
from kforge.suite.task import TaskSpec
from kforge.suite.task_process import TaskProcess, TaskProcessClosed
from kforge.verify.device_lock import ENV as LOCK_ENV

if TYPE_CHECKING:
    from kforge.platforms import Platform

RETRIES = 1  # a task whose process died is run this many times more
LOST = "its process ended"  # how a row lost with its process begins: such a problem is done again on a re-run


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
    gpu: str | None = None  # the device it is pinned to, as the platform's variable names it


def slots_for(platform: str, workers: int | None) -> list[Slot]:
    """Where tasks run at once. On a GPU platform, `workers` slots (default: one per visible GPU), dealt out
    over the GPUs in turn, each task shown only its GPU through the platform's variable (CUDA_VISIBLE_DEVICES,
    HIP_VISIBLE_DEVICES, ...); else `workers` CPU slots (default 1) that share the cores. Slots that share a
    device share its lock (`verify/device_lock.py`): one times while the others build and check."""
    from kforge.paths import cache_dir

    locks = cache_dir().expanduser() / "device-locks"
    device = _device_platform(platform)
    gpus = _visible_devices(device) if device is not None else []
    if device is not None and gpus:
        count = workers or len(gpus)
        variable = device.visible_devices_variable
        slots = []
        for index in range(count):
            gpu, turn = gpus[index % len(gpus)], index // len(gpus)
            environment = {variable: gpu} if variable else {}
            if count > len(gpus):
                environment[LOCK_ENV] = str(locks / f"{device.name}-{gpu}.lock")
            slots.append(Slot(f"gpu {gpu}" + (f" slot {turn + 1}" if turn else ""), environment, gpu))
        return slots
    count = max(1, workers or 1)
    environment = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // count))}
    if count > 1:
        environment[LOCK_ENV] = str(locks / "cpu.lock")
    return [Slot(f"cpu {index}", environment) for index in range(count)]


def gpu_memory(platform: str, slots: list[Slot]) -> GpuMemory | None:
    """Memory admission for the GPUs that several of `slots` share; None where none is shared (one slot per GPU,
    the CPU) or no shared GPU's memory can be read: then every slot takes its next problem as soon as it is free."""
    device = _device_platform(platform)
    if device is None:
        return None
    gpus = _visible_devices(device)
    slots_on = Counter(slot.gpu for slot in slots if slot.gpu is not None)
    total: dict[str, int] = {}
    for gpu in [gpu for gpu in gpus if slots_on[gpu] > 1]:
        try:
            size = device.device_memory(gpus.index(gpu))  # its position: the index this process knows it by
        except Exception:  # a device that does not answer is left unadmitted, as before
            size = None
        if size:
            total[gpu] = size
    return GpuMemory(total) if total else None


class SlotLost(Exception):
    """The slot's worker itself is gone (a Ray actor killed, its node lost): its problem goes to another slot."""


class SlotRunner(Protocol):
    """Where one task at a time runs: a local slot, or a Ray actor."""

    name: str
    gpu: str | None  # the GPU it shares with other slots, where that is known: admission by memory applies there

    def run(self, spec: TaskSpec, show: Callable[[str], None]) -> SuiteRow:
        """The task's row; SlotLost when the slot died under it."""
        ...

    def replacement(self) -> SlotRunner | None:
        """A slot to go on with after this one was lost, if there can be one."""
        ...

    def close(self) -> None:
        """Release what the slot keeps (its task process) once the suite has no more work for it."""
        ...


class LocalSlot:
    """A slot of this machine: its tasks run one after another in its kept task process, with its environment."""

    def __init__(self, slot: Slot, out: Path) -> None:
        self.slot = slot
        self.name = slot.name
        self.gpu = slot.gpu
        self.logs = out / "logs"
        self.tasks = TaskProcess(slot.environment, self.logs / f"slot {slot.name}.log".replace(" ", "-"))

    def run(self, spec: TaskSpec, show: Callable[[str], None]) -> SuiteRow:
        self.logs.mkdir(parents=True, exist_ok=True)
        return task_row(spec, self.slot.name, self.tasks, self.logs / log_name(spec.problem), show)

    def replacement(self) -> SlotRunner | None:
        return None  # a local slot is never lost: its task's process is, and task_row retries that

    def close(self) -> None:
        self.tasks.close()


def log_name(problem: str) -> str:
    return problem.replace(os.sep, "__") + ".log"


def run_suite(problems: list[FoundProblem], make_spec: Callable[[FoundProblem], TaskSpec], out: Path,
              runners: list[SlotRunner], on_progress: Callable[[SuiteProgress], None] | None = None,
              on_row: Callable[[SuiteRow], None] | None = None, memory: GpuMemory | None = None,
              on_note: Callable[[str], None] | None = None) -> list[SuiteRow]:
    """Run every problem not yet in `out/results.jsonl` on `runners` (one task each at a time); returns all rows,
    old and new, in the problems' order. A problem whose slot is lost is run once more on another. With `memory`,
    a problem starts on a GPU it shares only once it fits there; `on_note` gets a line when it waits for that, or
    runs alone, and one first for the rows kept from an earlier run."""
    results = ResultsFile(out / "results.jsonl")
    done = results.rows()
    pending = [problem for problem in problems if not _finished(done.get(problem.name), problem)]
    progress = SuiteProgress(total=len(problems), done=len(problems) - len(pending))
    if progress.done and on_note:
        on_note(f"resumed: {progress.done} of {len(problems)} problems kept from {results.path}, "
                f"{len(pending)} to run")
    queue: list[tuple[FoundProblem, int]] = [(problem, 1) for problem in pending]
    queue_lock = threading.Lock()

    def next_problem() -> tuple[FoundProblem, int] | None:
        with queue_lock:
            return queue.pop(0) if queue else None

    def record(row: SuiteRow, slot_name: str) -> None:
        results.append(row)
        with progress.lock:
            progress.done += 1
            progress.finished.append(row)
            progress.running.pop(slot_name, None)
        if on_row:
            on_row(row)

    def admitted(runner: SlotRunner, problem: FoundProblem,
                 show: Callable[[str], None]) -> contextlib.AbstractContextManager[Estimate | None]:
        """Its GPU's memory held for the problem while it runs (waiting until it fits), where slots share it."""
        if memory is None or runner.gpu is None or not memory.shares(runner.gpu):
            return contextlib.nullcontext()
        show("estimating its memory")

        def say(text: str) -> None:
            show(text)
            if on_note:
                on_note(f"{problem.name}: {text}")

        return memory.held(runner.gpu, memory.estimate(problem.path), say)

    def work(runner: SlotRunner) -> None:
        current: SlotRunner | None = runner
        while current is not None and (item := next_problem()) is not None:
            problem, tries = item
            slot_name = current.name

            def show(text: str, slot_name: str = slot_name, name: str = problem.name) -> None:
                with progress.lock:
                    progress.running[slot_name] = f"{name}: {text}"

            try:
                with admitted(current, problem, show) as estimate:
                    row = current.run(make_spec(problem), show)
            except TaskProcessClosed:  # the suite is stopping (Ctrl-C): this problem stays to do
                return
            except SlotLost as lost:
                with progress.lock:
                    progress.running.pop(slot_name, None)
                if tries <= RETRIES:
                    with queue_lock:
                        queue.append((problem, tries + 1))
                else:
                    record(SuiteRow(problem=problem.name, path=str(problem.path), status="error", tries=tries,
                                    device=slot_name, reason=f"{LOST}: its slot was lost twice ({lost})"), slot_name)
                current = current.replacement()
                continue
            needs = estimate.bytes if estimate is not None else None
            record(row.model_copy(update={"tries": max(row.tries, tries),
                                          "memory_gb": round(needs / GB, 2) if needs is not None else None}),
                   slot_name)

    threads = [threading.Thread(target=work, args=(runner,), name=f"kforge-suite-{runner.name}", daemon=True)
               for runner in runners]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            if on_progress:
                on_progress(progress)
            time.sleep(0.5)
    finally:
        for runner in runners:
            runner.close()
    rows = results.rows()
    return [rows[problem.name] for problem in problems if problem.name in rows]


def task_row(spec: TaskSpec, where: str, tasks: TaskProcess, log: Path,
             show: Callable[[str], None] | None = None) -> SuiteRow:
    """Run `spec` in `tasks` (its events go to `log`, shown through `show` as they come); retried once, in a fresh
    process, when the process dies without a row, then a row saying so. `where` names the slot in the row."""
    code: int | None = None
    for attempt in range(1 + RETRIES):
        with tempfile.TemporaryDirectory(prefix="kforge-suite-") as scratch:
            spec_file, row_file = Path(scratch) / "spec.json", Path(scratch) / "row.json"
            spec_file.write_text(spec.model_dump_json())
            code = tasks.run(spec_file, row_file, log, (lambda: show(_last_line(log))) if show else None)
            if row_file.exists():
                row = SuiteRow.model_validate_json(row_file.read_text())
                return row.model_copy(update={"device": where, "tries": attempt + 1})
    return SuiteRow(problem=spec.problem, path=spec.path, status="error", device=where, tries=1 + RETRIES,
                    reason=f"{LOST} with status {code} before writing a result (log: {log})")


def _finished(row: SuiteRow | None, problem: FoundProblem) -> bool:
    """A row that still stands: the problem file has not changed since, and it was not cut off by a lost
    process (those are tried again)."""
    if row is None:
        return False
    from kforge.problem import source_hash

    unchanged = not row.problem_hash or row.problem_hash == source_hash(problem.path.read_text())
    return unchanged and not row.reason.startswith(LOST)


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


def _device_platform(name: str) -> type[Platform] | None:
    """The accelerator platform a suite on `name` runs on ('auto': the first present), or None for the CPU."""
    from kforge.platforms import AUTO_ORDER, PlatformError, platform_class

    for candidate in [other for other in AUTO_ORDER if other != "cpu"] if name == "auto" else [name]:
        try:
            cls = platform_class(candidate)
        except PlatformError:
            return None
        if cls.name != "cpu" and (name != "auto" or cls.is_available()):
            return cls
    return None


def _visible_devices(platform: type[Platform]) -> list[str]:
    """The devices a task may be pinned to: as the platform's variable lists them, else every one it counts."""
    variable = platform.visible_devices_variable
    listed = os.environ.get(variable) if variable else None
    if listed is not None:
        return [device.strip() for device in listed.split(",") if device.strip()]
    try:
        return [str(index) for index in range(platform.device_count())]
    except Exception:
        return []
