"""Searching a plan's variants apart from judging them (issue 39): many variants timed in one worker, the way an
autotuner times its configurations, so that the full harness judges only the one or two worth judging.

A judgment by the harness (evaluate.py) costs 30-100 s on a large problem: fresh workers, three correctness
trials, the outside clock, rounds interleaved with the baselines. An autotuner needs none of that to rank
variants: it needs each variant's time on the problem's real inputs, and to know that the variant computes the
right thing. So here the variants are tried one after another in a single sandboxed worker (`TryRequest`): each is
imported, called once on inputs drawn for the search, timed by the worker's usual protocol (fresh inputs and a
flushed cache for every call, device events) over a few dozen milliseconds, and let go. Its output comes back as a
file and is compared here with the reference's output, computed once for the whole search in this process.

What this is not: a verdict. The worker is as confined as an evaluation's while it builds (the run phase, which
refuses programs once a candidate is loaded, cannot hold for a worker that imports one variant after another), and
what it reports only orders the variants. The variant picked is judged by the full harness, in a worker of its own,
like any candidate; a variant wrong here is dropped and never judged. Builds made here are not kept in the build
store (one worker's directory holds every variant's): compiled languages are built ahead (verify/prebuild.py) and
restored here from the store, checked, like in any evaluation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from pydantic import BaseModel, ConfigDict, Field

from kforge.platforms import get_platform
from kforge.problem import Problem
from kforge.verify.artifact_store import artifact_key
from kforge.verify.correctness import compare
from kforge.verify.device_lock import device_lock
from kforge.verify.evaluate import EvalOptions, _Context, _Evaluation, _Failed
from kforge.verify.protocol import TryReply, TryRequest
from kforge.verify.sandbox import Worker, WorkerFailure
from kforge.verify.static_check import check_source
from kforge.verify.timing import TimingPlan, summarize
from kforge.verify.verdict import Outcome

Progress = Callable[[str], None]

# A variant within this share of its floor ends the search (engine/cost.py says why).
GOOD_ENOUGH = 0.85
# Apart from every seed an evaluation draws its inputs after (evaluate.py), so that the search's inputs are not
# the judged ones.
_SEARCH_SEED = 9_000_011


class SearchSettings(BaseModel):
    """How long each variant is timed: a few dozen milliseconds of calls, enough to rank variants whose times
    differ by more than a few percent (closer ones are all worth judging alike)."""

    model_config = ConfigDict(frozen=True)

    warmup_ms: float = 10.0
    rep_ms: float = 50.0
    min_reps: int = Field(5, ge=1)
    max_reps: int = Field(100, ge=1)
    max_wall_ms: float = Field(5_000.0, gt=0, description="wall time of one variant's timed calls, inputs drawn")
    budget_s: float | None = Field(None, gt=0, description="stop trying variants once this much wall time has "
                                                           "gone (the first is always tried)")

    def plan(self, seed: int) -> TimingPlan:
        return TimingPlan(seed=seed, warmup_ms=self.warmup_ms, rep_ms=self.rep_ms, min_reps=self.min_reps,
                          max_reps=self.max_reps, max_wall_ms=self.max_wall_ms, spot_fractions=())


@dataclass(frozen=True)
class Tried:
    """One variant as the search saw it: its time (median and interquartile range of its calls), or why it was
    dropped."""

    index: int
    median_ms: float | None = None
    iqr_ms: float | None = None
    dropped: str | None = None  # one line: the policy, the build, the run or the comparison
    build_s: float = 0.0
    seconds: float = 0.0  # the wall time its try took, build included
    floor_share: float | None = None  # its floor over its median (engine/cost.py), where the caller gave a floor

    @property
    def usable(self) -> bool:
        return self.dropped is None and self.median_ms is not None


def ranked(tried: Sequence[Tried]) -> list[Tried]:
    """The variants worth judging, quickest first."""
    return sorted((one for one in tried if one.usable), key=lambda one: one.median_ms or 0.0)


def search_variants(problem: Problem, sources: Sequence[str], options: EvalOptions,
                    settings: SearchSettings | None = None, progress: Progress | None = None,
                    clock: Callable[[], float] = time.monotonic,
                    floors_ms: Sequence[float | None] | None = None) -> list[Tried]:
    """Try each of `sources` (candidates' sources, one language) in one sandboxed worker, in order; one `Tried`
    per source, in the same order, those not reached marked so: the budget was spent, or a variant came within
    GOOD_ENOUGH of its floor (`floors_ms`, one per source, None where unknown). Raises PlatformError for an unknown
    platform and SandboxUnavailable where `options.require_sandbox` asks for limits this machine cannot enforce."""
    settings = settings or SearchSettings()
    say = progress or (lambda _message: None)
    context = _Context(problem, None, get_platform(options.platform), options, say, None)
    search = _Search(_Evaluation(context), settings, clock)
    return search.run(list(sources), list(floors_ms) if floors_ms is not None else [None] * len(sources))


class _Search:
    def __init__(self, evaluation: _Evaluation, settings: SearchSettings, clock: Callable[[], float]) -> None:
        self.evaluation = evaluation
        self.ctx = evaluation.ctx
        self.settings = settings
        self.clock = clock
        self.seed = self.ctx.input_seed + _SEARCH_SEED
        self.worker: Worker | None = None

    def run(self, sources: list[str], floors_ms: list[float | None]) -> list[Tried]:
        ctx = self.ctx
        started = self.clock()
        inputs = ctx.problem.inputs(self.seed, device=ctx.platform.device)
        with torch.no_grad():
            expected = ctx.reference_model(*inputs)
        del inputs
        tried: list[Tried] = []
        try:
            with device_lock().shared():
                for index, source in enumerate(sources):
                    budget = self.settings.budget_s
                    if tried and budget is not None and self.clock() - started > budget:
                        tried.extend(Tried(later, dropped="not tried: the search's time budget was spent")
                                     for later in range(index, len(sources)))
                        break
                    ctx.progress(f"searching: variant {index + 1} of {len(sources)}")
                    one = self.try_one(index, source, expected)
                    floor = floors_ms[index] if index < len(floors_ms) else None
                    if floor is not None and one.median_ms:
                        one = dataclasses.replace(one, floor_share=floor / one.median_ms)
                    tried.append(one)
                    if one.floor_share is not None and one.floor_share >= GOOD_ENOUGH:
                        tried.extend(Tried(later, dropped=f"not tried: variant {index + 1} came within "
                                                          f"{one.floor_share:.0%} of its roofline floor")
                                     for later in range(index + 1, len(sources)))
                        break
        finally:
            self.retire()
        return tried

    def try_one(self, index: int, source: str, expected: object) -> Tried:
        started = self.clock()
        violations = check_source(source, self.ctx.options.policy, self.ctx.reference_ops)
        if violations:
            return Tried(index, dropped=f"the policy rejects it: {violations[0].message}")
        try:
            reply = self.ask_try(index, source)
        except _Failed as failure:
            if failure.outcome in (Outcome.TIMEOUT, Outcome.CRASHED) or failure.rule == "dynamic.protocol":
                self.retire()  # stuck, dead, or no longer to be believed: the next variant gets a fresh worker
            first = str(failure).strip().splitlines()[0] if str(failure).strip() else failure.outcome.value
            return Tried(index, dropped=f"{failure.outcome.value}: {first}"[:300],
                         seconds=self.clock() - started)
        took = self.clock() - started
        assert self.worker is not None
        try:
            output = self.evaluation.read_outputs(self.worker, self.worker.path(f"try-{index}.pt")).get("output")
        except _Failed as failure:
            self.retire()
            return Tried(index, dropped=f"its output could not be read: {failure}"[:300], seconds=took)
        comparison = compare(expected, output, self.ctx.options.tolerance)
        if not comparison.ok:
            return Tried(index, dropped=f"incorrect: {comparison.reason}"[:300], build_s=reply.build_s, seconds=took)
        if not reply.times_ns or any(t <= 0 for t in reply.times_ns):
            return Tried(index, dropped="the worker reported no valid timings", seconds=took)
        stats = summarize(reply.times_ns)
        return Tried(index, median_ms=stats.median_ms, iqr_ms=stats.iqr_ms, build_s=reply.build_s, seconds=took)

    def ask_try(self, index: int, source: str) -> TryReply:
        """The variant tried in the search's worker (started, or started again after a variant killed it)."""
        evaluation, ctx = self.evaluation, self.ctx
        worker = self.current_worker()
        with contextlib.suppress(OSError):  # a store that cannot be read: the variant builds in the worker
            evaluation.store.restore(artifact_key(source), worker.directory, worker.owner)
        try:
            solution = worker.hand_over(f"variant-{index}.py", source)
        except WorkerFailure as failure:
            raise _Failed(Outcome.CRASHED, str(failure)) from None
        request = TryRequest(problem=str(worker.path("problem.py")), platform=ctx.platform.name, solution=str(solution),
                             seed=ctx.options.seed, input_seed=self.seed, plan=self.settings.plan(self.seed + 1),
                             out=str(worker.path(f"try-{index}.pt")))
        timeout = ctx.options.build_timeout_s + ctx.options.timeout_s
        with device_lock().exclusive():
            return evaluation.ask(worker, request, TryReply, timeout)

    def current_worker(self) -> Worker:
        if self.worker is None:
            worker = self.evaluation.spawn_worker()
            try:
                self.evaluation.ready(worker)
                worker.hand_over("problem.py", self.ctx.problem.source)
            except WorkerFailure as failure:
                worker.close()
                raise _Failed(Outcome.CRASHED, str(failure)) from None
            except BaseException:
                worker.close()
                raise
            self.worker = worker
        return self.worker

    def retire(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker.close()
            self.worker = None
