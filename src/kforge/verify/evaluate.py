"""The one entry point of the harness: `evaluate(problem, solution) -> Verdict`.

Order of work: load and validate the problem here (it is the user's own code); check the candidate's
source against the policy; build and load the candidate in a sandboxed worker; run correctness trials
(fresh seeds, every input variant, two calls each, operators recorded, inputs checked for changes); then
time the reference (eager and torch.compile) in a worker of its own and the candidate in its worker with
the same protocol, spot-check outputs produced while timing, and cross-check the worker's clock against
this process's clock. Everything the workers say is checked here.
"""

from __future__ import annotations

import contextlib
import random
import re
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import psutil
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kforge.paths import cache_dir
from kforge.platforms import Platform, get_platform
from kforge.problem import Problem, Solution, SolutionError, load_problem, load_solution
from kforge.verify import freeze, state, tensors
from kforge.verify.artifact_store import ArtifactStore, Restored, artifact_key
from kforge.verify.correctness import Comparison, Tolerance, compare, degenerate_warning, inputs_changed
from kforge.verify.device_lock import device_lock
from kforge.verify.machine_load import LoadWatch
from kforge.verify.ops import reference_ops
from kforge.verify.outside_clock import BatchReading, outside_disagreement, plan_batches
from kforge.verify.policy import Policy, judge_dispatched_ops
from kforge.verify.protocol import (
    BatchReply,
    BatchRequest,
    Failure,
    HandOverReply,
    HandOverRequest,
    LoadReply,
    LoadRequest,
    MalformedReply,
    ProfileReply,
    ProfileRequest,
    ReplyT,
    RunReply,
    RunRequest,
    StageReply,
    StageRequest,
    TimeReply,
    TimeRequest,
)
from kforge.verify.ratio import is_settled, speedup_interval, unsettled_warning
from kforge.verify.sandbox import (
    SANDBOX_HINT,
    Limits,
    SandboxUnavailable,
    UnsafeFile,
    Worker,
    WorkerFailure,
    WorkerPool,
)
from kforge.verify.static_check import check_source
from kforge.verify.timing import (
    ClockReadings,
    TimingPlan,
    TimingSettings,
    clock_disagreement,
    host_bound_warning,
    summarize,
)
from kforge.verify.verdict import MAX_REASON_CHARS, Baselines, Outcome, TimingStats, Verdict, capped
from kforge.verify.worker_layout import reference_builds, reference_caches

Progress = Callable[[str], None]

_WORKER_START_S = 120.0
# The name a candidate's copy has in its worker's directory.
_HANDED_AS = "solution.py"
# Calls of the candidate on each correctness trial's inputs: a second call shows state kept between calls.
_RUN_CALLS = 2
_TIMING_SEED = 1_000_003
# Between the first input seeds of consecutive timing rounds: more than any round's calls.
_ROUND_SEED_STRIDE = 100_003
# The inputs of the batches timed on the harness's own clock (outside_clock.py), apart from the timed calls'.
_BATCH_SEED = 7_000_003
# A second look at the outside clock times batches planned for calls this many times quicker than the median: as
# many more calls a batch (up to the plan's cap), so that what a request costs once weighs that much less.
_RECHECK_LONGER = 8
# What torch.save adds to the tensors' own bytes in an outputs file: the archive's records and their alignment,
# the pickled structure. Far more than an honest file's (kilobytes), far less than a reason to refuse one.
_OUTPUT_FILE_SLACK = 64 << 20
# How a refusal by the sandbox reads in a failure's text (errno 13 or 1, as C, Python or a shell words it).
_REFUSED = re.compile(r"Permission denied|Operation not permitted|\bE(ACCES|PERM)\b|\berror (13|1)\b|"
                      r"\[Errno (13|1)\]|can't create")


# What a candidate can be timed against: PyTorch eager and torch.compile of the reference.
BASELINE_NAMES = ("eager", "compile")


class EvalOptions(BaseModel):
    """Everything that shapes one evaluation; the defaults are what `kforge eval` uses."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    platform: str = "auto"
    language: str | None = None
    timeout_s: float = Field(120.0, gt=0, description="limit for each step of running the candidate")
    build_timeout_s: float = Field(900.0, gt=0, description="limit for compiling the candidate")
    memory_mb: int | None = Field(8192, description="resident memory limit of each worker, MiB")
    trials: int = Field(3, ge=1)
    seed: int = Field(0, description="seed the models' parameters are drawn after")
    input_seed: int | None = Field(None, ge=0, lt=2**62, description=(
        "base of the seeds every input is drawn after (correctness trials and timed calls); None draws a "
        "secret one for each evaluation, so a candidate cannot know its inputs ahead and answer them from a "
        "table; the verdict tells which was used, and giving it back reproduces the same inputs"))
    baselines: tuple[str, ...] = ("eager", "compile")
    timing: TimingSettings = TimingSettings()
    measure: bool = True
    policy: Policy = Policy()
    tolerance: Tolerance | None = None
    cache_dir: Path | None = None
    require_sandbox: bool = Field(False, description=(
        "refuse to evaluate where the kernel cannot enforce every limit of the sandbox (no Landlock, as under "
        "gVisor or an old kernel; no seccomp); by default such an evaluation goes on, with a warning"))

    @field_validator("baselines")
    @classmethod
    def _known_baselines(cls, baselines: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(baselines) - set(BASELINE_NAMES))
        if unknown:
            raise ValueError(f"unknown baseline {', '.join(unknown)}; choose {' or '.join(BASELINE_NAMES)}")
        return tuple(dict.fromkeys(baselines))


class _Failed(Exception):
    """Ends an evaluation early with a verdict."""

    def __init__(self, outcome: Outcome, reason: str, rule: str | None = None) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.rule = rule


@dataclass
class _Context:
    problem: Problem
    solution: Solution | None  # None when only the reference is timed
    platform: Platform
    options: EvalOptions
    progress: Progress
    pool: WorkerPool | None
    input_seed: int = field(init=False)  # the given one, else a secret drawn for this evaluation

    def __post_init__(self) -> None:
        given = self.options.input_seed
        self.input_seed = secrets.randbelow(2**31) if given is None else given

    @property
    def cache(self) -> Path:
        return (self.options.cache_dir or cache_dir()).expanduser()

    @property
    def candidate(self) -> Solution:
        assert self.solution is not None, "this step needs a candidate"
        return self.solution

    @cached_property
    def reference_model(self) -> torch.nn.Module:
        return self.problem.make_model(self.options.seed).to(self.platform.device)

    @cached_property
    def reference_ops(self) -> set[str]:
        inputs = self.problem.inputs(_trial_seed(self.input_seed, 0), device=self.platform.device)
        # A call outside the correctness trials' sequence: the buffers it moves are put back, so that the trials
        # start from the state the candidate's model is built with.
        saved = state.snapshot(self.reference_model)
        ops = reference_ops(self.reference_model, inputs)
        state.restore(self.reference_model, saved)
        return ops


ProblemInput = Problem | str | Path  # a loaded problem (validated when it was loaded), or its file
SolutionInput = Solution | str | Path  # a candidate (Solution.from_source, load_solution), or its file


def as_problem(problem: ProblemInput, check_runs: bool = True) -> Problem:
    """`problem` itself when loaded already, else the file loaded (and, with `check_runs`, validated)."""
    return problem if isinstance(problem, Problem) else load_problem(problem, check_runs=check_runs)


def as_solution(solution: SolutionInput, language: str | None, default: str = "cpp") -> Solution:
    """`solution` itself when given as one, else the file read; a file's language is `language`, else its
    kernel's, else (no kernel) `default`."""
    return solution if isinstance(solution, Solution) else load_solution(solution, language, default)


def _context(problem: ProblemInput, solution: SolutionInput, options: EvalOptions, progress: Progress,
             pool: WorkerPool | None, check_runs: bool) -> _Context:
    """Load what an evaluation or a profile needs; ProblemError, SolutionError or PlatformError for bad input."""
    loaded_problem = as_problem(problem, check_runs=check_runs)
    platform = get_platform(options.platform)
    loaded_solution = as_solution(solution, options.language, default=platform.languages[0])
    if loaded_solution.language not in platform.languages:
        raise SolutionError(f"platform {platform.name} does not run {loaded_solution.language} candidates "
                            f"(it runs {', '.join(platform.languages)})")
    return _Context(loaded_problem, loaded_solution, platform, options, progress, pool)


def evaluate(problem: ProblemInput, solution: SolutionInput, options: EvalOptions | None = None,
             progress: Progress | None = None, pool: WorkerPool | None = None) -> Verdict:
    """Judge `solution` against `problem`, each loaded already or given as a file. Raises ProblemError,
    SolutionError or PlatformError for bad input, SandboxUnavailable where `options.require_sandbox` asks for
    limits this machine cannot enforce.

    Callers judging many candidates of one problem pass the loaded `Problem` (validated once, when loaded) and
    each candidate as `Solution.from_source(text, language)`, and a `WorkerPool`, so that workers are started
    ahead. Only the harness writes the files its workers read.
    """
    options = options or EvalOptions()
    say = progress or (lambda _message: None)
    say("loading the problem")
    context = _context(problem, solution, options, say, pool, check_runs=True)
    untimed = context.platform.untimed_reason(context.candidate.language)
    if untimed:
        context.options = options.model_copy(update={"measure": False})
    evaluation = _Evaluation(context)
    if untimed:
        evaluation.warnings.append(untimed)
    try:
        return evaluation.run()
    finally:
        if pool is not None:
            pool.replenish()


def measure_baselines(problem: ProblemInput, options: EvalOptions | None = None, progress: Progress | None = None,
                      pool: WorkerPool | None = None) -> Baselines:
    """Time the reference alone, eager and under torch.compile (as `options.baselines` lists), with the protocol
    that times candidates, in a worker of its own. For callers judging many candidates of one problem: they
    evaluate each without baselines and compare it with these (`Verdict.with_baselines`), so every candidate
    meets the same figures. Raises ProblemError or PlatformError for bad input, RuntimeError when the
    reference cannot be timed (the message says why)."""
    options = options or EvalOptions()
    say = progress or (lambda _message: None)
    context = _Context(as_problem(problem), None, get_platform(options.platform), options, say, pool)
    evaluation = _Evaluation(context)
    eager = compiled = None
    try:
        lock = device_lock()
        with lock.shared(), evaluation.spawn_worker(reference=True) as worker:
            evaluation.ready(worker)
            if pool is not None:
                pool.settle()
            series = evaluation.reference_series(worker)  # loaded (and compiled) beside others' work
            with lock.exclusive():
                timed = evaluation.time_in_rounds(series)
            eager, compiled = timed.get("eager"), timed.get("compile")
    except _Failed as failure:
        raise RuntimeError(f"the reference could not be timed: {failure}") from None
    finally:
        if pool is not None:
            pool.replenish()
    return Baselines(eager=eager, compiled=compiled, warnings=evaluation.warnings)


class ProfileFailed(RuntimeError):
    """The candidate could not be profiled; the message says why."""


def collect_profile(problem: ProblemInput, solution: SolutionInput, options: EvalOptions | None = None,
                    pool: WorkerPool | None = None, calls: int = 5) -> dict[str, Any]:
    """Profile a candidate's forward in a sandboxed worker; returns the worker's profile data, unvalidated.

    For candidates already judged correct: the profile is advice for the analyst, and never part of a verdict.
    """
    options = options or EvalOptions()
    context = _context(problem, solution, options, lambda _message: None, pool, check_runs=False)
    evaluation = _Evaluation(context)
    try:
        lock = device_lock()
        with lock.shared(), evaluation.candidate_worker() as worker:
            evaluation.ready(worker)
            evaluation.load(worker, candidate=True, compile_model=False)
            with lock.exclusive():  # a profile times the kernels too
                request = ProfileRequest(seed=context.input_seed + _TIMING_SEED, calls=calls)
                reply = evaluation.ask(worker, request, ProfileReply, options.timeout_s)
    except _Failed as failure:
        raise ProfileFailed(str(failure)) from None
    return reply.profile


class _Evaluation:
    def __init__(self, context: _Context) -> None:
        self.ctx = context
        self.warnings: list[str] = []
        self.build_s: float | None = None
        self.comparison = Comparison(True)
        self.trials_run = 0
        self.timing_s = 0.0
        self.call_bytes = 0  # the inputs and outputs of one call, as the reference's took
        self.outside_ms: float | None = None
        self.started = time.perf_counter()
        self.restored: Restored | None = None  # what the build store put into the candidate's worker
        self.rounds_run = 0  # timing rounds taken so far (time_in_rounds)
        self.intervals: dict[str, tuple[float, float] | None] = {}  # per baseline, the candidate's speedup's
        self.machine_busy: str | None = None  # LoadReading.line() over the timing rounds
        self.built_state: dict[str, torch.Tensor] = {}  # the reference's buffers as built, before any trial

    def run(self) -> Verdict:
        reference_worker: Worker | None = None
        try:
            self.check_static()
            with device_lock().shared(), self.candidate_worker() as worker:
                # The reference's worker starts importing now, while the candidate builds and is checked.
                if self.ctx.options.measure and self.ctx.options.baselines:
                    reference_worker = self.spawn_worker(reference=True)
                self.ready(worker)
                self.load(worker, candidate=True, compile_model=False)
                self.check_correctness(worker)
                if not self.ctx.options.measure:
                    return self.verdict(Outcome.CORRECT, "correct on every trial (timing skipped)")
                return self.measure(worker, reference_worker)
        except _Failed as failure:
            return self.verdict(failure.outcome, str(failure), rule=failure.rule)
        finally:
            if reference_worker is not None:
                reference_worker.close()

    # ---- steps -------------------------------------------------------------------------------------------
    def check_static(self) -> None:
        self.ctx.progress("checking the candidate's source against the policy")
        violations = check_source(self.ctx.candidate.source, self.ctx.options.policy, self.ctx.reference_ops)
        if violations:
            first = violations[0]
            more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
            raise _Failed(Outcome.REJECTED, f"{first.message}{more}", rule=first.rule)

    def spawn_worker(self, reference: bool = False) -> Worker:
        """A worker process, started (or taken from the pool) but not yet waited for. The reference's worker is
        trusted with caches of its own under the cache folder; a candidate's keeps all it compiles in its own
        directory (verify/worker_layout.py)."""
        ctx = self.ctx
        limits = Limits(memory_mb=ctx.options.memory_mb, limit_address_space=ctx.platform.limit_address_space)
        env = dict(ctx.platform.worker_environment())
        builds = None
        if reference:
            builds = reference_builds(ctx.cache)
            env.update(reference_caches(ctx.cache))
        if ctx.pool is not None:
            return ctx.pool.take(builds, limits, env)
        return Worker(builds, limits, env)

    @contextlib.contextmanager
    def candidate_worker(self) -> Iterator[Worker]:
        """The candidate's worker. Once it is done and dead, the harness keeps what it built in the build store
        (verify/artifact_store.py), but only after the candidate loaded: a build cut short is no library."""
        worker = self.spawn_worker()
        try:
            yield worker
        finally:
            worker.kill()
            if self.build_s is not None:
                with contextlib.suppress(OSError):  # a full disk costs the next evaluation a build, no more
                    self.store.ingest(artifact_key(self.ctx.candidate.source), worker.directory, self.restored)
            worker.close()

    @cached_property
    def store(self) -> ArtifactStore:
        return ArtifactStore.under(self.ctx.cache)

    def ready(self, worker: Worker) -> None:
        """Wait for a worker's greeting (once), and hold it to the sandbox's limits."""
        if not worker.started:
            try:
                worker.start(_WORKER_START_S)
            except WorkerFailure as failure:
                raise _Failed(Outcome.CRASHED, f"the worker did not start: {failure}") from None
        if not worker.unconfined:
            return
        if self.ctx.options.require_sandbox:
            raise SandboxUnavailable(f"the sandbox cannot be enforced here: {'; '.join(worker.unconfined)} "
                                     "(without --require-sandbox kforge goes on with a warning)")
        warning = f"sandbox not fully enforced on this machine: {'; '.join(worker.unconfined)}"
        if warning not in self.warnings:
            self.warnings.append(warning)

    def load(self, worker: Worker, candidate: bool, compile_model: bool, role: str = "candidate") -> None:
        """Load the reference, or with `candidate` the candidate, in `worker`. The worker reads copies this
        process wrote into its own directory: the sandbox lets it read nothing else of the user's files."""
        options = self.ctx.options
        if candidate:
            self.ctx.progress("building and loading the candidate")
            self.restore_builds(worker)
        try:
            problem = worker.hand_over("problem.py", self.ctx.problem.source)
            solution = worker.hand_over(_HANDED_AS, self.ctx.candidate.source) if candidate else None
        except WorkerFailure as failure:
            raise _Failed(Outcome.CRASHED, str(failure)) from None
        request = LoadRequest(problem=str(problem), solution=None if solution is None else str(solution),
                              seed=options.seed, platform=self.ctx.platform.name, compile=compile_model, role=role,
                              language=self.ctx.candidate.language if candidate else None)
        reply = self.ask(worker, request, LoadReply, options.build_timeout_s + options.timeout_s)
        if candidate:
            self.build_s = reply.build_s

    def restore_builds(self, worker: Worker) -> None:
        """Copy what earlier workers of this same candidate built, checked against the hashes the store recorded,
        into the worker's directory before the candidate loads; a stored file that fails the check costs a
        build, with a warning."""
        try:
            self.restored = self.store.restore(artifact_key(self.ctx.candidate.source), worker.directory, worker.owner)
        except OSError as exc:
            self.warnings.append(f"the build store could not be read ({exc.strerror}); the candidate was built again")
            return
        if self.restored.dropped:
            self.warnings.append(f"the build store's entry for this candidate was dropped and it was built again: "
                                 f"{self.restored.dropped}")

    def check_correctness(self, worker: Worker) -> None:
        ctx = self.ctx
        variants = ctx.problem.variant_count()
        self.built_state = state.snapshot(ctx.reference_model)
        for trial in range(ctx.options.trials):
            seed = _trial_seed(ctx.input_seed, trial)
            for variant in range(variants):
                label = f"trial {trial + 1}/{ctx.options.trials}" + (f", variant {variant}" if variant else "")
                ctx.progress(f"checking correctness: {label}")
                self.check_one(worker, seed, variant, label)
            self.trials_run += 1

    def check_one(self, worker: Worker, seed: int, variant: int, label: str) -> None:
        ctx = self.ctx
        inputs = ctx.problem.inputs(seed, variant, device=ctx.platform.device)
        reference_inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        expected_calls = self.reference_calls(reference_inputs, _RUN_CALLS)
        expected = expected_calls[0]
        self.call_bytes = max(self.call_bytes, _tensor_bytes(inputs) + _tensor_bytes(expected))
        if seed == _trial_seed(ctx.input_seed, 0) and variant == 0:
            warning = degenerate_warning(expected, ctx.options.tolerance)
            if warning:
                self.warnings.append(warning)
        out_path = worker.path(f"run-{seed}-{variant}.pt")
        request = RunRequest(seed=seed, variant=variant, calls=_RUN_CALLS,
                             record_ops=ctx.options.policy.dynamic_checks, out=str(out_path))
        reply = self.ask(worker, request, RunReply, ctx.options.timeout_s)
        violation = judge_dispatched_ops(set(reply.ops), ctx.reference_ops, ctx.options.policy)
        if violation:
            raise _Failed(Outcome.REJECTED, violation.message, rule=violation.rule)
        record = self.read_outputs(worker, out_path)
        outputs = record.get("outputs", [])
        if len(outputs) != _RUN_CALLS:
            raise _Failed(Outcome.CRASHED, "the worker's output file is incomplete")
        changed = inputs_changed(reference_inputs, record.get("inputs_after", []))
        if changed:
            raise _Failed(Outcome.INCORRECT, f"{label}: {changed}")
        for call, (output, reference) in enumerate(zip(outputs, expected_calls, strict=True)):
            comparison = compare(reference, output, ctx.options.tolerance)
            self.comparison = self.comparison.merged(comparison)
            if not comparison.ok:
                which = "" if call == 0 else "second call on the same input: "
                raise _Failed(Outcome.INCORRECT, f"{label}: {which}{comparison.reason}")
        self.check_state(record.get("buffers"), label)

    def reference_calls(self, inputs: list[Any], calls: int) -> list[Any]:
        """The reference's outputs for the calls a run request makes on `inputs`. A reference with buffers is called
        as often as the candidate is, so that its buffers (a batch norm's running statistics) have seen the same
        calls when they are compared; one without any has no state to follow, and is called once."""
        model = self.ctx.reference_model
        with torch.no_grad():
            outputs = [model(*inputs)]
            for _ in range(calls - 1):
                outputs.append(model(*inputs) if self.built_state else outputs[0])
        return outputs

    def check_state(self, candidate_buffers: Any, label: str) -> None:
        """The reference's buffers its calls so far changed, against the candidate's (verify/state.py)."""
        now = state.snapshot(self.ctx.reference_model)
        required = state.changed(self.built_state, now)
        if not required:
            return
        mismatch = state.compare_state(now, required, candidate_buffers, self.ctx.options.tolerance)
        if mismatch is not None:
            raise _Failed(Outcome.INCORRECT, f"{label}: {mismatch.message}", rule=state.STATE_RULE)

    def measure(self, worker: Worker, reference_worker: Worker | None) -> Verdict:
        ctx = self.ctx
        if ctx.pool is not None:
            ctx.pool.settle()
        series = [_Series("candidate", worker)]
        if reference_worker is not None:
            self.ready(reference_worker)
            series = self.reference_series(reference_worker) + series
        with device_lock().exclusive():  # no other process's work on the device while this one times
            timed = self.time_in_rounds(series)
        candidate = timed["candidate"]
        assert candidate is not None  # a candidate whose timing fails ends the evaluation (_Failed)
        self.check_outside_clock(next(one for one in series if one.name == "candidate"), candidate)
        warning = host_bound_warning(candidate)
        if warning:
            self.warnings.append(warning)
        for name, interval in self.intervals.items():
            baseline = timed.get(name)
            if interval is not None and baseline is not None and not is_settled(interval,
                                                                                ctx.options.timing.ratio_tolerance):
                self.warnings.append(unsettled_warning(name, baseline.median_ms / candidate.median_ms, interval,
                                                       self.rounds_run))
        return self.verdict(Outcome.CORRECT, f"correct on {self.trials_run} trials"
                            f"{' and every input variant' if ctx.problem.variant_count() > 1 else ''}",
                            timing=candidate, eager=timed.get("eager"), compiled=timed.get("compile"))

    def reference_series(self, reference_worker: Worker) -> list[_Series]:
        """The baselines `options.baselines` asks for, each loaded under its own name in the reference's
        worker; a torch.compile that cannot be loaded leaves a warning, not a failure."""
        series = []
        if "eager" in self.ctx.options.baselines:
            self.load(reference_worker, candidate=False, compile_model=False, role="eager")
            series.append(_Series("eager", reference_worker))
        if "compile" in self.ctx.options.baselines:
            try:
                self.load(reference_worker, candidate=False, compile_model=True, role="compile")
                series.append(_Series("compile", reference_worker))
            except _Failed as failure:
                self.warnings.append(f"torch.compile baseline unavailable: {failure}")
        return series

    def time_in_rounds(self, series: list[_Series]) -> dict[str, TimingStats | None]:
        """Time every series in `settings.rounds` rounds taken in turn, in the order given (eager, compile,
        candidate, eager, ...); each series' figures are all its rounds' calls together. A slow stretch of the
        machine then lands on every series rather than on one, and the speedups between them stay put. Where a
        candidate is timed beside baselines, rounds are added (up to `settings.max_rounds`) while the interval of
        a speedup is wider than `settings.ratio_tolerance` either side (verify/ratio.py); the intervals are kept
        in `self.intervals`, and a line in `self.machine_busy` where other work loaded the machine meanwhile.

        A candidate that fails ends the evaluation. A baseline that fails is timed no further and keeps the
        rounds it completed (none: no figure), with a warning; when its failure took the reference's worker
        down, so is every baseline sharing that worker. The candidate's verdict never pays for the reference.
        """
        settings = self.ctx.options.timing
        watch = LoadWatch().start()
        for index in range(settings.rounds):
            self.time_round(series, index, settings.rounds)
        self.intervals = self.speedup_intervals(series)
        while self.rounds_run < max(settings.max_rounds, settings.rounds) and not all(
                is_settled(interval, settings.ratio_tolerance) for interval in self.intervals.values()):
            self.time_round(series, self.rounds_run, settings.rounds)
            self.intervals = self.speedup_intervals(series)
        reading = watch.reading()
        self.machine_busy = reading.line() if reading is not None else None
        return {one.name: summarize(one.times, one.bound) if one.times else None for one in series}

    def time_round(self, series: list[_Series], index: int, planned: int) -> None:
        """Round `index` of every series still timed, in turn (`planned`: the rounds asked for, for progress)."""
        ctx = self.ctx
        of = f"of {planned}" if index < planned else f"added while a speedup's interval is wide (at most " \
                                                       f"{ctx.options.timing.max_rounds})"
        for one in series:
            if one.stopped:
                continue
            compiles = " (the first run compiles)" if one.name == "compile" and index == 0 else ""
            ctx.progress(f"timing {one.title}{compiles}, round {index + 1} {of}")
            try:
                with self.candidates_stopped(series, one):
                    times, bound = self.time(one.worker, one.trusted, index, role=one.name)
                if not one.trusted and not one.batches_settled([*one.times, *times]):
                    one.batches.extend(self.time_batches(one.worker, index, min(times)))
            except _Failed as failure:
                if not one.trusted:
                    raise
                down = [other for other in series if other.worker is one.worker and not other.stopped]
                for other in down if not one.worker.alive() else [one]:
                    other.stopped = True
                    cause = str(failure) if other is one else f"its worker died with {one.title}"
                    self.warnings.append(other.baseline_warning(cause, planned))
                continue
            one.times.extend(times)
            one.bound.extend(bound)
            one.round_times.append(times)
            one.rounds_done += 1
        self.rounds_run = index + 1

    @staticmethod
    def speedup_intervals(series: list[_Series]) -> dict[str, tuple[float, float] | None]:
        """Per baseline timed beside a candidate, the interval of the candidate's speedup over it."""
        candidate = next((one for one in series if not one.trusted), None)
        if candidate is None:
            return {}
        return {one.name: speedup_interval(one.round_times, candidate.round_times)
                for one in series if one.trusted and one.round_times}

    def time(self, worker: Worker, trusted: bool, round_index: int = 0,
             role: str | None = None) -> tuple[list[int], list[bool]]:
        """One round of timed calls: per-call nanoseconds and, where the platform tells, host-bound flags."""
        ctx = self.ctx
        plan = ctx.options.timing.round_plan(
            round_index, seed=ctx.input_seed + _TIMING_SEED + round_index * _ROUND_SEED_STRIDE,
            spot_fractions=(round(random.Random().uniform(0.05, 0.95), 4), 1.0))
        out_path = worker.path(f"timing-{time.monotonic_ns()}.pt")
        started = time.monotonic_ns()
        reply = self.ask(worker, TimeRequest(plan=plan, out=str(out_path), role=role), TimeReply,
                         ctx.options.timeout_s + 2 * (plan.warmup_ms + plan.rep_ms) / 1000)
        elapsed = time.monotonic_ns() - started
        self.timing_s += elapsed / 1e9
        times = reply.times_ns
        if not times or any(t < 0 for t in times):
            raise _Failed(Outcome.REJECTED, "the worker reported no valid timings", rule="dynamic.clock")
        lead_in = reply.lead_in_ns
        usable_lead_in = len(lead_in) == len(times) and all(t >= 0 for t in lead_in)
        readings = ClockReadings(times, reply.second_clock_ns, reply.loop_ns, elapsed,
                                 lead_in if usable_lead_in else [])
        if not trusted:
            self.spot_check(worker, out_path, plan)
            problem = clock_disagreement(readings)
            if problem:
                raise _Failed(Outcome.REJECTED, problem, rule="dynamic.clock")
        bound = reply.host_bound
        return times, bound if len(bound) == len(times) else []

    def spot_check(self, worker: Worker, out_path: Path, plan: TimingPlan) -> None:
        spots = self.read_outputs(worker, out_path)
        if len(spots) < len(set(plan.spot_fractions)) - 1 or not spots:
            raise _Failed(Outcome.REJECTED, "outputs produced while timing were not handed over",
                          rule="dynamic.spot-check")
        self.check_outputs(spots, plan.seed, "an output produced while timing")

    def check_outputs(self, outputs: dict[str, Any], first_seed: int, what: str) -> None:
        """Each handed-over output (keyed by its call's index) against the reference on that call's inputs."""
        ctx = self.ctx
        for key, output in outputs.items():
            index = int(key)
            inputs = ctx.problem.inputs(first_seed + index, device=ctx.platform.device)
            with torch.no_grad():
                expected = ctx.reference_model(*inputs)
            comparison = compare(expected, output, ctx.options.tolerance)
            if not comparison.ok:
                raise _Failed(Outcome.INCORRECT, f"{what} (call {index}) is wrong: {comparison.reason}")

    # ---- the harness's own clock (outside_clock.py) -------------------------------------------------------
    def candidates_stopped(self, series: list[_Series], timed: _Series) -> contextlib.AbstractContextManager[None]:
        """While a baseline is timed, every process of every candidate's worker stopped: a candidate's helpers
        cannot load the machine while it is not itself being timed."""
        if not timed.trusted:
            return contextlib.nullcontext()
        workers = {one.worker.process.pid for one in series if not one.trusted and one.worker.alive()}
        return freeze.stopped(workers)

    def time_batches(self, worker: Worker, round_index: int, claimed_ns: float) -> list[BatchReading]:
        """Short batches of the candidate's calls, each timed end to end on this process's clock, and two of their
        outputs (the last, and one picked once every batch was over) checked against the reference."""
        ctx = self.ctx
        memory = ctx.options.memory_mb * 2**20 if ctx.options.memory_mb else None
        plan = plan_batches(claimed_ns, self.call_bytes, memory)
        seed = ctx.input_seed + _BATCH_SEED + round_index * _ROUND_SEED_STRIDE
        timeout = ctx.options.timeout_s
        calls = plan.calls
        self.ask(worker, StageRequest(seed=seed, count=plan.staged, role="candidate"), StageReply, timeout)
        # Warm-up: caches, lazy state, and the allocator's blocks for as many outputs as a batch holds.
        self.ask(worker, BatchRequest(count=calls, hold=False), BatchReply, timeout)
        empty = [self.timed_ask(worker, BatchRequest(count=0))]
        timed = []
        for batch in range(1, plan.batches + 1):
            timed.append(self.timed_ask(worker, BatchRequest(start=batch * calls, count=calls)))
            empty.append(self.timed_ask(worker, BatchRequest(count=0)))
        picked = sorted({plan.staged - 1, random.randrange(calls, plan.staged)})
        out_path = worker.path(f"batch-{round_index}.pt")
        self.ask(worker, HandOverRequest(calls=picked, out=str(out_path)), HandOverReply, timeout)
        handed = self.read_outputs(worker, out_path)
        if sorted(int(key) for key in handed) != picked:
            raise _Failed(Outcome.REJECTED, "the outputs of a timed batch were not handed over",
                          rule="dynamic.spot-check")
        self.check_outputs(handed, seed, "an output of a batch timed on the harness's clock")
        return [BatchReading(calls=calls, batch_ns=took, empty_ns=min(empty)) for took in timed]

    def timed_ask(self, worker: Worker, request: BatchRequest) -> int:
        """Nanoseconds on this process's clock from sending `request` to holding its answer."""
        started = time.monotonic_ns()
        self.ask(worker, request, BatchReply, self.ctx.options.timeout_s)
        return time.monotonic_ns() - started

    def check_outside_clock(self, candidate: _Series, stats: TimingStats) -> None:
        """Reject a candidate whose worker's timer reported a median far below what its batches took on this
        clock."""
        if not candidate.batches:
            return
        median_ns = stats.median_ms * 1e6
        problem = outside_disagreement(median_ns, candidate.batches)
        if problem:
            # A machine busy with other work delays each request's threads by whole time slices (seen: an honest
            # 0.3 ms CPU kernel's one-call batches at 5 ms under the test suite's load), which one look cannot tell
            # from a timer that lies. Look once more, now, with batches of many more calls, over which a wake-up
            # spreads thin; a timer that divides its figures disagrees at any length.
            with device_lock().exclusive():
                candidate.batches.extend(self.time_batches(candidate.worker, self.rounds_run,
                                                           median_ns / _RECHECK_LONGER))
            problem = outside_disagreement(median_ns, candidate.batches)
        self.outside_ms = min(reading.per_call_ns for reading in candidate.batches) / 1e6
        if problem:
            raise _Failed(Outcome.REJECTED, problem, rule="dynamic.clock")

    # ---- plumbing ----------------------------------------------------------------------------------------
    def ask(self, worker: Worker, request: BaseModel, expected: type[ReplyT], timeout_s: float) -> ReplyT:
        """Send `request` and return the `expected` reply; anything else ends the evaluation with a verdict."""
        try:
            reply = worker.request(request, expected, timeout_s)
        except WorkerFailure as failure:
            outcome = Outcome.TIMEOUT if failure.kind == "timeout" else Outcome.CRASHED
            raise _Failed(outcome, str(failure)) from None
        except MalformedReply as malformed:
            raise _Failed(Outcome.REJECTED, f"the worker's reply to {request.op} did not fit the protocol "  # type: ignore[attr-defined]
                          f"({malformed}); the worker was killed", rule="dynamic.protocol") from None
        if not isinstance(reply, Failure):
            return reply
        outcome = Outcome(reply.kind) if reply.kind in Outcome._value2member_map_ else Outcome.RUNTIME_ERROR
        message = _cited_by_its_name(capped(reply.message, MAX_REASON_CHARS), self.ctx.solution)
        if worker.confined and _REFUSED.search(message):
            message += f"\n{SANDBOX_HINT}"
        raise _Failed(outcome, message, rule=reply.rule)

    def read_outputs(self, worker: Worker, path: Path) -> dict[str, Any]:
        """The outputs file `path` the worker wrote, read without following anything the candidate may have put
        under its name (Worker.read_file) and parsed from the bytes read; a verdict when it cannot be."""
        try:
            data = worker.read_file(path, self.output_file_cap)
            worker.discard(path)
            record = tensors.load(data)
        except FileNotFoundError:
            raise _Failed(Outcome.CRASHED, "the worker wrote no output file") from None
        except UnsafeFile as exc:
            raise _Failed(Outcome.REJECTED, f"the candidate's output file {path.name} {exc}; the harness reads only a "
                          "regular file the worker wrote, no larger than its memory could hold",
                          rule="dynamic.output-type") from None
        except Exception as exc:
            raise _Failed(Outcome.REJECTED, f"the candidate's outputs could not be read safely: "
                          f"{str(exc).splitlines()[0][:200]}", rule="dynamic.output-type") from None
        if not isinstance(record, dict):
            raise _Failed(Outcome.REJECTED, "the candidate's output file has the wrong structure",
                          rule="dynamic.output-type")
        return record

    @cached_property
    def output_file_cap(self) -> int:
        """The largest outputs file the harness reads. Every tensor of an honest one was held by the worker at once
        when it saved them: in its host memory, which its limit bounds (the machine's, where it has none), or on
        its device. A larger file is not an honest one (a sparse file, say), and reading it whole could exhaust
        this process's memory."""
        limit_mb = self.ctx.options.memory_mb
        host = limit_mb << 20 if limit_mb else psutil.virtual_memory().total
        return host + _device_memory(self.ctx.platform.device) + _OUTPUT_FILE_SLACK

    def verdict(self, outcome: Outcome, reason: str, rule: str | None = None, timing: TimingStats | None = None,
                eager: TimingStats | None = None, compiled: TimingStats | None = None) -> Verdict:
        if outcome == Outcome.CORRECT and self.trials_run == 0:
            raise RuntimeError("kforge bug: a verdict of correct without a single correctness trial")
        total = time.perf_counter() - self.started
        runtime = timing.median_ms if timing else None
        compared = self.trials_run > 0 or outcome == Outcome.INCORRECT
        return Verdict(
            verdict=outcome, reason=reason, rule=rule, platform=self.ctx.platform.name,
            language=self.ctx.candidate.language, runtime_ms=runtime,
            max_abs_error=self.comparison.max_abs_error if compared else None,
            max_rel_norm_error=self.comparison.max_rel_norm_error if compared else None,
            trials=self.trials_run, timing=timing, build_s=self.build_s, eval_s=total - (self.build_s or 0.0),
            timing_s=self.timing_s, warnings=self.warnings, input_seed=self.ctx.input_seed,
            outside_ms=self.outside_ms if timing else None, machine_busy=self.machine_busy if timing else None,
            timing_rounds=self.rounds_run if timing else None,
        ).with_baselines(Baselines(eager=eager, compiled=compiled), intervals=self.intervals)


_SERIES_TITLES = {"candidate": "the candidate", "eager": "the reference (eager)",
                   "compile": "the reference under torch.compile"}


@dataclass
class _Series:
    """One thing being timed in rounds: its worker, the name its model was loaded under, its calls so far."""

    name: str  # "candidate", "eager" or "compile"
    worker: Worker
    stopped: bool = False  # failed, or its worker died: timed no further
    rounds_done: int = 0
    times: list[int] = field(default_factory=list)
    round_times: list[list[int]] = field(default_factory=list)  # the same calls, one list per round
    bound: list[bool] = field(default_factory=list)
    batches: list[BatchReading] = field(default_factory=list)  # the candidate's, timed on the harness's clock

    def batches_settled(self, times: list[int]) -> bool:
        """Whether the batches timed so far already agree with the worker's median of `times` with a margin
        (a quickest batch no slower a call than that median, against the check's factor of two): more batches
        could only be quicker still, so later rounds skip them (each round's batches cost drawing their inputs,
        0.4 s on this machine for a small CPU kernel)."""
        return bool(self.batches and times) and (
            min(reading.per_call_ns for reading in self.batches) <= statistics.median(times))

    @property
    def trusted(self) -> bool:
        """A reference: its failure costs its own figure, never the candidate's verdict."""
        return self.name != "candidate"

    @property
    def title(self) -> str:
        return _SERIES_TITLES[self.name]

    def baseline_warning(self, cause: str, rounds: int) -> str:
        label = "torch.compile" if self.name == "compile" else self.name
        if not self.rounds_done:
            return f"{label} baseline unavailable: {cause}"
        return f"{label} baseline timed in {self.rounds_done} of {rounds} rounds only: {cause}"


def _tensor_bytes(value: Any) -> int:
    """Bytes of every tensor in a (nested) value."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(_tensor_bytes(item) for item in value)
    return 0


def _device_memory(device: torch.device) -> int:
    """The device's memory in bytes (torch.cuda, torch.xpu and the like tell it); 0 for the CPU, and where torch
    does not tell."""
    if device.type == "cpu":
        return 0
    properties = getattr(getattr(torch, device.type, None), "get_device_properties", None)
    try:
        return int(properties(device).total_memory) if properties is not None else 0
    except (RuntimeError, AssertionError, AttributeError, ValueError):
        return 0


def _cited_by_its_name(message: str, candidate: Solution | None) -> str:
    """A worker's message with the candidate's copy (`at solution.py:13 in forward`) named by the file the user gave
    (`at my_kernel.py:13`). The copy keeps its fixed name: one the user chose could shadow a module the worker
    imports later (a `triton.py`), the worker's directory being first on its path."""
    if candidate is None or candidate.path is None:
        return message
    return message.replace(f"at {_HANDED_AS}:", f"at {candidate.path.name}:")


def _trial_seed(input_seed: int, trial: int) -> int:
    return input_seed + 101 * (trial + 1)
