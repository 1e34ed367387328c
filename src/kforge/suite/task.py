"""One problem of a suite, in a process apart from the suite's: optimized (any model, `builtin` included) or, with
a solution given, judged; the outcome is one `SuiteRow`. Whatever goes wrong becomes the row's reason, never an
exception: a suite goes on past any problem.

    python -m kforge.suite.task SPEC.json ROW.json [LOG]       one task
    python -m kforge.suite.task --serve REPLY_FD [LOG]          a slot's tasks, one after another (task_process.py)

Serving, the process reads one job a line on stdin (`{"spec", "row", "log"}`), runs it as the one-task form
does with its output sent to the job's log, and answers `{"done": ROW}` on descriptor REPLY_FD. torch and
kforge are imported once, and every task's runs share one worker pool (so one fork server per slot).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kforge.platforms import PlatformError, get_platform
from kforge.problem import Problem, ProblemError, SolutionError, load_problem
from kforge.suite.results import SuiteRow
from kforge.verify.evaluate import EvalOptions, evaluate
from kforge.verify.sandbox import SandboxUnavailable, kept_pool
from kforge.verify.timing import HOST_BOUND_WARNING_SHARE
from kforge.verify.verdict import Verdict


class TaskSpec(BaseModel):
    """What to do with one problem; the same for every problem of a suite but the problem and its solution."""

    model_config = ConfigDict(frozen=True)

    problem: str
    path: str
    mode: Literal["optimize", "judge"]
    solution: str | None = None  # judge: the file judged
    model: str | None = None  # optimize: PROVIDER:MODEL, or None/builtin for the engine
    base_url: str | None = None
    platform: str = "auto"
    language: str | None = None
    db: str | None = None
    time_budget_s: float | None = None
    eval_options: EvalOptions = EvalOptions()


def run_task(spec: TaskSpec, say: Callable[[str], None] | None = None) -> SuiteRow:
    """The row for `spec`'s problem."""
    started = time.monotonic()
    base = {"problem": spec.problem, "path": spec.path}
    try:
        problem = load_problem(spec.path)
    except ProblemError as exc:
        return SuiteRow(**base, status="error", reason=str(exc), wall_s=time.monotonic() - started)
    base["problem_hash"] = problem.source_hash
    try:
        row = _judge(spec, problem, base, say) if spec.mode == "judge" else _optimize(spec, problem, base, say)
    except (SolutionError, PlatformError, SandboxUnavailable, ValueError) as exc:
        row = SuiteRow(**base, status="error", reason=str(exc).splitlines()[0][:500])
    except Exception as exc:  # a bug, not the problem's fault: kept in the row, with where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        row = SuiteRow(**base, status="error",
                       reason=f"{type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"[:500])
    return row.model_copy(update={"wall_s": time.monotonic() - started})


def _judge(spec: TaskSpec, problem: Problem, base: dict[str, str], say: Callable[[str], None] | None) -> SuiteRow:
    if spec.solution is None or not Path(spec.solution).is_file():
        return SuiteRow(**base, status="error", reason=f"no solution: {spec.solution} does not exist")
    options = spec.eval_options.model_copy(update={"platform": spec.platform, "language": spec.language})
    verdict = evaluate(problem, spec.solution, options, progress=say, pool=kept_pool())
    return _row_of(base, verdict, problem, options, attempts=1)


def _optimize(spec: TaskSpec, problem: Problem, base: dict[str, str], say: Callable[[str], None] | None) -> SuiteRow:
    from kforge.config import load_settings
    from kforge.engine.capture import LoweringError
    from kforge.llm import LLMError
    from kforge.pipelines.optimize import check_builtin, run_request, start_run
    from kforge.pipelines.request import BUILTIN, build_request
    from kforge.store import Store

    settings = load_settings({"model": spec.model, "base_url": spec.base_url, "db": spec.db})
    request = build_request(Path(spec.path), model=settings.model, platform=spec.platform, language=spec.language,
                            eval_options=spec.eval_options, time_budget_s=spec.time_budget_s,
                            max_output_tokens=settings.max_output_tokens, temperature=settings.temperature)
    with Store(settings.db_path) as store:
        try:
            if request.model == BUILTIN:
                check_builtin(request)
            chat = None if request.model == BUILTIN else settings.chat_model()
            run_id = start_run(store, request, settings.budget())
            outcome = run_request(store, run_id, request, chat, settings.budget(),
                                  on_event=(lambda event: say(event.text)) if say else None)
        except (LoweringError, LLMError) as exc:
            return SuiteRow(**base, status="unsolved", reason=str(exc).splitlines()[0][:500])
        attempts = len(store.attempts_of(run_id))
        costs = store.costs_of(run_id)
    best = outcome.result.best
    usage = {"attempts": attempts, "llm_tokens": costs.tokens, "cost_usd": costs.cost_usd, "run_id": run_id}
    if best is None or best.verdict is None:
        return SuiteRow(**base, status="unsolved", reason=outcome.result.stop_reason, **usage)
    confirmed = outcome.confirmation
    verdict = confirmed if confirmed is not None else best.verdict
    row = _row_of(base, verdict, problem, request.evaluation_options(), attempts=attempts)
    return row.model_copy(update=usage)


def _row_of(base: dict[str, str], verdict: Verdict, problem: Problem, options: EvalOptions,
            attempts: int) -> SuiteRow:
    timing = verdict.timing
    return SuiteRow(**base, status="solved" if verdict.correct else "unsolved", verdict=verdict.verdict,
                    rule=verdict.rule, reason=verdict.reason, runtime_ms=verdict.runtime_ms,
                    spread=timing.relative_spread if timing else None, eager_ms=verdict.eager_ms,
                    compile_ms=verdict.compile_ms, speedup_vs_eager=verdict.speedup_vs_eager,
                    speedup_vs_compile=verdict.speedup_vs_compile, attempts=attempts,
                    speedup_vs_eager_interval=verdict.speedup_vs_eager_interval,
                    speedup_vs_compile_interval=verdict.speedup_vs_compile_interval,
                    machine_busy=verdict.machine_busy,
                    roofline_share=roofline_share(problem, options, verdict.runtime_ms) if _roofline_meant(verdict)
                    else None)


def _roofline_meant(verdict: Verdict) -> bool:
    """Whether a share of the roofline says something of the kernel: not when the machine was busy while it was
    timed, nor when most of its calls were bound by the host issuing them (the share is then the host's)."""
    if not verdict.correct or verdict.machine_busy:
        return False
    share = verdict.timing.host_bound_share if verdict.timing else None
    return share is None or share < HOST_BOUND_WARNING_SHARE


def roofline_share(problem: Problem, options: EvalOptions, runtime_ms: float | None) -> float | None:
    """The share of its roofline bound a kernel of `runtime_ms` reaches: the reference's FLOPs and minimum bytes
    against the device's measured peaks (cached per machine). None where either cannot be had."""
    if runtime_ms is None or runtime_ms <= 0:
        return None
    try:
        import torch

        from kforge.profiling import measure_peaks, measure_workload
        from kforge.profiling.roofline import roofline

        platform = get_platform(options.platform)
        model = problem.make_model(options.seed).to(platform.device)
        workload = measure_workload(model, problem.inputs(options.seed, device=platform.device))
        peaks = measure_peaks(platform, dtype=getattr(torch, workload.dtype, torch.float32),
                              cache_dir=options.cache_dir)
        return roofline(workload, runtime_ms * 1000, peaks).fraction_of_bound
    except Exception:  # advice only: a problem whose FLOPs cannot be counted still gets its row
        return None


def run_job(spec_file: Path, row_file: Path, log: Path | None) -> None:
    """Run the task `spec_file` names, its events (each with the seconds since it started) appended to `log`, and
    write its row to `row_file` whole (the runner never reads half a row)."""
    spec = TaskSpec.model_validate_json(spec_file.read_text())
    with open(log, "a", buffering=1) if log is not None else contextlib.nullcontext() as events:
        started = time.monotonic()

        def logged(text: str) -> None:
            if events:
                events.write(f"{time.monotonic() - started:7.1f} s  {text}\n")

        say = logged if events else None
        row = run_task(spec, say)
        if say:  # the outcome ends the log, whatever it is: a problem refused before any event has it alone
            say(row.status + (f": {row.reason}" if row.reason else ""))
    partial = row_file.with_suffix(".partial")
    partial.write_text(row.model_dump_json())
    partial.replace(row_file)


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr (its libraries' warnings, a traceback) into `log` for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def serve(reply_fd: int) -> None:
    """Run the jobs read from stdin one after another, answering each on `reply_fd`; returns at end of input."""
    from kforge.verify.sandbox import keeping_pool

    with os.fdopen(reply_fd, "w", buffering=1) as replies, keeping_pool():
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            log = Path(job["log"])
            with _output_to(log):
                run_job(Path(job["spec"]), Path(job["row"]), log)
            replies.write(json.dumps({"done": job["row"]}) + "\n")


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] == "--serve":
        serve(int(arguments[1]))
        return
    run_job(Path(arguments[0]), Path(arguments[1]), Path(arguments[2]) if len(arguments) > 2 else None)


if __name__ == "__main__":
    main()
