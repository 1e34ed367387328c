"""`kforge optimize`: puts a pipeline (the KForge loop, or the staged pipeline) together from settings, a store,
a chat model and the harness."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch

from kforge.agents.analyst import AnalystAgent, ProfileView
from kforge.agents.analyzer import AnalyzerAgent
from kforge.agents.generator import GenerationAgent
from kforge.agents.planner import PlannerAgent
from kforge.agents.stage_writer import StageWriter
from kforge.agents.targets import Target
from kforge.engine.capture import LoweringError
from kforge.engine.cost import CostModel, Floor
from kforge.engine.propose import propose
from kforge.engine.tune import TuneSettings
from kforge.llm.base import ChatModel
from kforge.llm.budget import Budget, Spend
from kforge.pipelines.baselines import RunBaselines
from kforge.pipelines.builtin import BuiltinRun, Search, stage_engine
from kforge.pipelines.confirm import confirm_best
from kforge.pipelines.events import EventSink, Reporter
from kforge.pipelines.judging import Evaluator
from kforge.pipelines.loop import AttemptRecord, KForgeLoop, LoopResult
from kforge.pipelines.profiles import profile_candidate
from kforge.pipelines.recording import RecordingChatModel
from kforge.pipelines.request import BUILTIN, OptimizeError, OptimizeRequest, resume_request, start_run
from kforge.pipelines.stage_knowledge import KnowledgeAccess
from kforge.pipelines.staged import StagedAgents, StagedPipeline, StagedResult
from kforge.platforms import get_platform
from kforge.problem import Problem, Solution, load_problem
from kforge.profiling import measure_peaks, measure_workload
from kforge.store import Store, StoreError
from kforge.verify.evaluate import EvalOptions, ProfileFailed, evaluate
from kforge.verify.prebuild import Prebuilder
from kforge.verify.sandbox import WorkerPool, run_pool
from kforge.verify.search import SearchSettings, Tried, search_variants
from kforge.verify.verdict import Verdict


@dataclass
class OptimizeOutcome:
    run_id: int
    result: LoopResult | StagedResult
    confirmation: Verdict | None = None  # the best judged again at the end (pipelines/confirm.py)


def run_request(store: Store, run_id: int, request: OptimizeRequest, chat: ChatModel | None,
                budget: Budget | None = None, use_cache: bool = True,
                on_event: EventSink | None = None) -> OptimizeOutcome:
    """Run (or resume) `request` as run `run_id`: the builtin engine alone when its model is `builtin` (no
    `chat` needed), else the LLM pipeline it names with `chat`."""
    if request.model == BUILTIN:
        return run_builtin(store, run_id, request, on_event=on_event)
    if chat is None:
        raise OptimizeError(f"model {request.model} needs a chat model")
    return run_optimize(store, run_id, request, chat, budget or Budget(), use_cache=use_cache, on_event=on_event)


def run_optimize(store: Store, run_id: int, request: OptimizeRequest, chat: ChatModel, budget: Budget,
                 use_cache: bool = True, on_event: EventSink | None = None) -> OptimizeOutcome:
    """Run (or resume) the loop for `run_id`; the run is marked finished, failed or interrupted."""
    problem = load_problem(request.problem)
    target = Target(request.platform, request.language)
    reference = request.reference.read_text() if request.reference else None
    spent = store.costs_of(run_id)
    walls = [wall for wall in (budget.max_wall_s, request.time_budget_s) if wall]
    budget = Budget(max_calls=budget.max_calls, max_tokens=budget.max_tokens, max_usd=budget.max_usd,
                    max_wall_s=min(walls) if walls else None,
                    spent=Spend(calls=spent.calls, tokens=spent.tokens, usd=spent.cost_usd))
    recording = RecordingChatModel(chat, store, run_id, budget=budget, use_cache=use_cache)
    generator = GenerationAgent(recording, target, problem.source, reference, request.max_output_tokens,
                                request.temperature)
    analyst = AnalystAgent(recording, target, problem.source, request.send_images, temperature=request.temperature)
    options = request.evaluation_options()
    with run_pool() as pool, _marking_status(store, run_id) as ending:
        evaluator = _source_evaluator(problem, options, pool, store, run_id, on_event)
        profiler = _candidate_profiler(problem, options, pool, store, on_event)
        staged = request.pipeline == "staged"
        loop_settings = replace(request.loop, rounds=0) if staged else request.loop  # staged: a first kernel only
        loop = KForgeLoop(generator=generator, analyst=analyst, evaluate=evaluator, profile=profiler,
                          store=store, run_id=run_id, settings=loop_settings, on_event=on_event)
        if staged:
            pipeline = _staged_pipeline(request, problem, recording, evaluator, profiler, store, run_id, loop,
                                        on_event)
            result: LoopResult | StagedResult = pipeline.run(request.kernel.read_text() if request.kernel else None)
        else:
            result = loop.run(_builtin_start(problem, request, store, run_id, evaluator, on_event))
        confirmation = _settle_best(store, run_id, result, problem, options, pool, on_event)
        ending.reason = result.stop_reason
    return OptimizeOutcome(run_id, result, confirmation)


@dataclass
class _Ending:
    reason: str = ""  # why the run stopped, set by the block when it completes


@contextmanager
def _marking_status(store: Store, run_id: int) -> Iterator[_Ending]:
    """Mark the run finished (with the pipeline's stop reason) when the block completes, interrupted on Ctrl-C,
    failed with the error's first line on anything else."""
    ending = _Ending()
    status, reason = "failed", "stopped by an error"
    try:
        yield ending
        status, reason = "finished", ending.reason
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted (Ctrl-C)"
        raise
    except Exception as exc:
        reason = str(exc).strip() or type(exc).__name__
        raise
    finally:
        store.finish_run(run_id, status, reason)  # type: ignore[arg-type]


def _settle_best(store: Store, run_id: int, result: LoopResult | StagedResult, problem: Problem,
                 options: EvalOptions, pool: WorkerPool, on_event: EventSink | None) -> Verdict | None:
    """Record the pipeline's best (faster beyond noise), so that `kforge show` and `export` name the same
    attempt, then judge it again with the reference timed beside it (pipelines/confirm.py)."""
    if result.best is None:
        return None
    store.record_best(run_id, result.best.attempt_id)
    return confirm_best(store, run_id, problem, result.best, options, pool, on_event)


def check_builtin(request: OptimizeRequest) -> None:
    """Raise LoweringError (one line) unless the builtin engine can write candidates for the request."""
    if request.pipeline != "loop":
        raise OptimizeError("the builtin engine runs on its own: drop --pipeline staged, or pass --model")
    propose(load_problem(request.problem), request.language, limit=1,
            vendor_gemm=request.evaluation_options().policy.vendor_gemm_passes)


def run_builtin(store: Store, run_id: int, request: OptimizeRequest,
                on_event: EventSink | None = None) -> OptimizeOutcome:
    """Run (or resume) the builtin engine for `run_id` (no LLM); LoweringError when it cannot lower the problem."""
    problem = load_problem(request.problem)
    options = request.evaluation_options()
    with run_pool() as pool, _marking_status(store, run_id) as ending:
        evaluator, baselines = _judging(problem, options, pool, store, run_id, on_event)
        engine = BuiltinRun(store, run_id, request.platform, request.language, evaluator, on_event,
                            prebuild=_prebuilder(options, on_event),
                            search=_searcher(problem, baselines.candidate_options, request.language, on_event),
                            cost=lambda: _cost_model(problem, options), clock=baselines.search_clock)
        tuning = TuneSettings(budget_s=request.time_budget_s) if request.time_budget_s else None
        result = engine.run(problem, vendor_gemm=options.policy.vendor_gemm_passes, settings=tuning)
        confirmation = _settle_best(store, run_id, result, problem, options, pool, on_event)
        ending.reason = result.stop_reason
    return OptimizeOutcome(run_id, result, confirmation)


def _builtin_start(problem: Problem, request: OptimizeRequest, store: Store, run_id: int,
                   evaluator: Callable[[str], Verdict], on_event: EventSink | None) -> str | None:
    """The builtin engine's best kernel, the first one the model refines; None when it has none."""
    if not request.builtin_start:
        return None
    engine = BuiltinRun(store, run_id, request.platform, request.language, evaluator, on_event)
    try:
        result = engine.run(problem, vendor_gemm=request.evaluation_options().policy.vendor_gemm_passes, variants=1)
    except LoweringError as exc:
        Reporter(on_event)(f"{exc} (the model starts from scratch)")
        return None
    return result.best.source if result.best is not None else None


def _staged_pipeline(request: OptimizeRequest, problem: Problem, chat: RecordingChatModel,
                     evaluator: Callable[[str], Verdict], profiler: Callable[[AttemptRecord], ProfileView],
                     store: Store, run_id: int, loop: KForgeLoop, on_event: EventSink | None) -> StagedPipeline:
    target = Target(request.platform, request.language)
    agents = StagedAgents(
        analyzer=AnalyzerAgent(chat, target, problem.source, request.send_images, temperature=request.temperature),
        planner=PlannerAgent(chat, target, temperature=request.temperature),
        writer=StageWriter(chat, target, problem.source, request.max_output_tokens, request.temperature))
    device = get_platform(request.platform).describe().get("device")
    knowledge = KnowledgeAccess.load(request.platform, request.language, device, problem.source,
                                     request.staged.knowledge_tokens)
    options = request.evaluation_options()
    candidate_options = options.model_copy(update={"baselines": ()})  # as RunBaselines.candidate_options
    engine = stage_engine(problem, options.policy.vendor_gemm_passes, on_event,
                          search=_searcher(problem, candidate_options, request.language, on_event),
                          cost=lambda: _cost_model(problem, options)) if request.builtin_start else None
    return StagedPipeline(agents=agents, knowledge=knowledge, evaluate=evaluator, profile=profiler, store=store,
                          run_id=run_id, settings=request.staged, functional_pass=loop.run, on_event=on_event,
                          engine=engine)


def _source_evaluator(problem: Problem, options: EvalOptions, pool: WorkerPool, store: Store,
                      run_id: int, on_event: EventSink | None) -> Evaluator:
    """Judges a candidate's source; every timed verdict is compared with the run's one set of baselines."""
    return _judging(problem, options, pool, store, run_id, on_event)[0]


def _judging(problem: Problem, options: EvalOptions, pool: WorkerPool, store: Store, run_id: int,
             on_event: EventSink | None) -> tuple[Evaluator, RunBaselines]:
    """`_source_evaluator`'s evaluator, and the run's baselines it compares with."""
    baselines = RunBaselines(store, run_id, problem, options, pool, on_event)
    candidate_options = baselines.candidate_options

    def evaluate_source(source: str) -> Verdict:
        verdict = evaluate(problem, Solution.from_source(source, options.language), candidate_options, pool=pool)
        return baselines.attach(verdict)

    return evaluate_source, baselines


def _prebuilder(options: EvalOptions, on_event: EventSink | None) -> Callable[[list[str]], None]:
    """Compiles candidates' sources into the build cache their evaluations read, as many at once as there are
    cores; a failed build is left for the evaluation to report."""
    def prebuild(sources: list[str]) -> None:
        platform = get_platform(options.platform)
        parallel = max(1, min(len(sources), os.cpu_count() or 1))
        with Prebuilder(platform, options.cache_dir, parallel=parallel, policy=options.policy,
                        timeout_s=options.build_timeout_s) as builder:
            futures = [builder.submit(source) for source in sources]
            built = sum(future.result().ok for future in futures)
        Reporter(on_event)(f"builtin: {built} of {len(sources)} variants compiled")

    return prebuild


def _searcher(problem: Problem, options: EvalOptions, language: str,
              on_event: EventSink | None) -> Search | None:
    """The variant search (verify/search.py) where the platform times `language`; None where it does not (Triton in
    the CPU interpreter), for the run then has nothing to rank variants by but the harness's verdicts."""
    if get_platform(options.platform).untimed_reason(language):
        return None
    say = Reporter(on_event)

    def search(sources: list[str], floors_ms: list[float | None], budget_s: float | None) -> list[Tried]:
        return search_variants(problem, sources, options, SearchSettings(budget_s=budget_s), progress=say,
                               floors_ms=floors_ms)

    return search


def _cost_model(problem: Problem, options: EvalOptions) -> CostModel:
    """The search's cost model: the reference's FLOPs and minimum bytes (counted here, on the trusted reference)
    against the device's measured peaks (profiling/peaks.py, measured once per machine and cached). Advice only: a
    reference that cannot be counted leaves the search without floors, in the backend's order."""
    platform = get_platform(options.platform)
    device = platform.device
    tensor_cores = device.type == "cuda" and torch.version.hip is None and \
        torch.cuda.get_device_capability(device) >= (8, 0)
    try:
        model = problem.make_model(options.seed).to(device)
        workload = measure_workload(model, problem.inputs(options.seed, device=device))
        del model
        peaks = measure_peaks(platform, dtype=getattr(torch, workload.dtype, torch.float32),
                              cache_dir=options.cache_dir)
    except Exception:  # any failure of the count only costs the search its floors
        return CostModel(None, tensor_cores)
    return CostModel(Floor.of(workload, peaks), tensor_cores)


def _candidate_profiler(problem: Problem, options: EvalOptions, pool: WorkerPool, store: Store,
                        on_event: EventSink | None) -> Callable[[AttemptRecord], ProfileView]:
    def profile(record: AttemptRecord) -> ProfileView:
        assert record.verdict is not None
        solution = Solution.from_source(record.source, options.language)
        try:
            result = profile_candidate(problem, solution, options, pool, runtime_ms=record.verdict.runtime_ms)
        except (ProfileFailed, ValueError) as exc:
            Reporter(on_event)(f"profiling failed ({str(exc).splitlines()[0][:120]}); the analyst gets timings only")
            return timing_profile(record.verdict)
        store.record_profile(record.attempt_id, result.profile.source, result.profile.model_dump(mode="json"),
                             result.png)
        return ProfileView(text=result.text + "\n" + timing_profile(record.verdict).text, png=result.png)

    return profile


def timing_profile(verdict: Verdict) -> ProfileView:
    """The measurements the harness already has, as text (used where no profiler output is available)."""
    lines = [f"candidate median {verdict.runtime_ms:.4g} ms" if verdict.runtime_ms is not None else "no timing"]
    if verdict.timing:
        lines.append(f"spread: IQR {verdict.timing.iqr_ms:.3g} ms over {verdict.timing.repeats} runs; "
                     f"min {verdict.timing.min_ms:.4g} ms")
        share = verdict.timing.host_bound_share
        if share is not None:
            lines.append(f"host-bound calls: {share:.0%} (the host took longer to issue the call than the device "
                         "to run it; above half, the runtime is launch and Python overhead, not kernel time)")
    if verdict.eager_ms is not None:
        lines.append(f"PyTorch eager {verdict.eager_ms:.4g} ms (speedup {verdict.speedup_vs_eager:.2f}x)")
    if verdict.compile_ms is not None:
        lines.append(f"torch.compile {verdict.compile_ms:.4g} ms (speedup {verdict.speedup_vs_compile:.2f}x)")
    return ProfileView(text="\n".join(lines))


__all__ = ["OptimizeError", "OptimizeOutcome", "OptimizeRequest", "StoreError", "check_builtin", "resume_request",
           "run_builtin", "run_optimize", "run_request", "start_run"]
