"""`kforge optimize`: puts a pipeline (the KForge loop, or the staged pipeline) together from settings, a store,
a chat model and the harness."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kforge.agents.analyst import AnalystAgent, ProfileView
from kforge.agents.analyzer import AnalyzerAgent
from kforge.agents.generator import GenerationAgent
from kforge.agents.planner import PlannerAgent
from kforge.agents.stage_writer import StageWriter
from kforge.agents.targets import Target
from kforge.engine.capture import LoweringError
from kforge.engine.propose import propose
from kforge.llm.base import ChatModel
from kforge.llm.budget import Budget, Spend
from kforge.llm.recording import RecordingChatModel
from kforge.pipelines.baselines import RunBaselines
from kforge.pipelines.builtin import BuiltinRun, stage_engine
from kforge.pipelines.confirm import confirm_best
from kforge.pipelines.loop import AttemptRecord, KForgeLoop, LoopEvent, LoopResult, LoopSettings
from kforge.pipelines.profiles import profile_candidate
from kforge.pipelines.stage_knowledge import KnowledgeAccess
from kforge.pipelines.staged import StagedAgents, StagedPipeline, StagedResult, StagedSettings
from kforge.platforms import get_platform
from kforge.problem import Problem, load_problem, source_hash
from kforge.store import Store, StoreError
from kforge.verify.evaluate import EvalOptions, ProfileFailed, evaluate
from kforge.verify.prebuild import Prebuilder
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Verdict


class OptimizeError(ValueError):
    """A request that cannot be carried out; the message is one line for the user."""


@dataclass(frozen=True)
class OptimizeRequest:
    problem: Path
    platform: str
    language: str
    model: str
    loop: LoopSettings = field(default_factory=LoopSettings)
    eval_options: EvalOptions = field(default_factory=EvalOptions)
    reference: Path | None = None
    send_images: bool = False
    max_output_tokens: int = 8192
    temperature: float | None = None
    pipeline: str = "loop"  # "loop" (KForge) or "staged" (Xe-Forge)
    staged: StagedSettings = field(default_factory=StagedSettings)
    kernel: Path | None = None  # the staged pipeline's starting kernel
    builtin_start: bool = True  # the loop starts from the builtin engine's kernel when it can lower the problem
    allow_vendor_gemm: bool = False  # candidates may call the vendor's GEMM/convolution (the engine offers such too)

    def evaluation_options(self) -> EvalOptions:
        """The harness options of every evaluation in the run: the request's target, and its policy."""
        policy = self.eval_options.policy
        if self.allow_vendor_gemm:
            policy = policy.allowing_vendor_gemm()
        return self.eval_options.model_copy(update={"platform": self.platform, "language": self.language,
                                                    "policy": policy})

    def for_record(self) -> dict[str, Any]:
        return {"problem": str(self.problem), "platform": self.platform, "language": self.language,
                "model": self.model, "reference": str(self.reference) if self.reference else None,
                "loop": self.loop.__dict__, "send_images": self.send_images,
                "max_output_tokens": self.max_output_tokens, "temperature": self.temperature,
                "eval": self.eval_options.model_dump(mode="json", exclude={"policy", "cache_dir", "tolerance"}),
                "pipeline": self.pipeline, "staged": self.staged.for_record(),
                "kernel": str(self.kernel) if self.kernel else None,
                "kernel_hash": source_hash(self.kernel.read_text()) if self.kernel else None,
                "builtin_start": self.builtin_start, "allow_vendor_gemm": self.allow_vendor_gemm}

    @classmethod
    def from_record(cls, record: dict[str, Any], eval_options: EvalOptions) -> OptimizeRequest:
        return cls(problem=Path(record["problem"]), platform=record["platform"], language=record["language"],
                   model=record["model"], loop=LoopSettings(**record["loop"]),
                   eval_options=EvalOptions.model_validate({**eval_options.model_dump(), **record.get("eval", {})}),
                   reference=Path(record["reference"]) if record.get("reference") else None,
                   send_images=bool(record.get("send_images")),
                   max_output_tokens=int(record.get("max_output_tokens", 8192)),
                   temperature=record.get("temperature"), pipeline=record.get("pipeline", "loop"),
                   staged=StagedSettings.from_record(record.get("staged", {})),
                   kernel=Path(record["kernel"]) if record.get("kernel") else None,
                   builtin_start=bool(record.get("builtin_start", False)),
                   allow_vendor_gemm=bool(record.get("allow_vendor_gemm", False)))


@dataclass
class OptimizeOutcome:
    run_id: int
    result: LoopResult | StagedResult
    confirmation: Verdict | None = None  # the best judged again at the end (pipelines/confirm.py)


def start_run(store: Store, request: OptimizeRequest) -> int:
    problem = load_problem(request.problem)
    run = store.create_run(command="optimize", problem_path=str(problem.path), problem_hash=problem.source_hash,
                           platform=request.platform, language=request.language, model=request.model,
                           settings=request.for_record())
    return run.id


def resume_request(store: Store, run_id: int, eval_options: EvalOptions) -> OptimizeRequest:
    """The request a run was started with, so resuming it repeats the same work."""
    run = store.get_run(run_id)
    if run is None:
        raise OptimizeError(f"no run {run_id} in the store")
    if run.command != "optimize":
        raise OptimizeError(f"run {run_id} was made by {run.command!r}, not optimize")
    request = OptimizeRequest.from_record(run.settings, eval_options)
    if source_hash(request.problem.read_text()) != run.problem_hash:
        raise OptimizeError(f"the problem file {request.problem} changed since run {run_id} started")
    if request.kernel and source_hash(request.kernel.read_text()) != run.settings.get("kernel_hash"):
        raise OptimizeError(f"the starting kernel {request.kernel} changed since run {run_id} started")
    return request


def run_optimize(store: Store, run_id: int, request: OptimizeRequest, chat: ChatModel, budget: Budget,
                 use_cache: bool = True, on_event: LoopEvent | None = None) -> OptimizeOutcome:
    """Run (or resume) the loop for `run_id`; the run is marked finished, failed or interrupted."""
    problem = load_problem(request.problem)
    target = Target(request.platform, request.language)
    reference = request.reference.read_text() if request.reference else None
    spent = store.costs_of(run_id)
    budget = Budget(max_calls=budget.max_calls, max_tokens=budget.max_tokens, max_usd=budget.max_usd,
                    max_wall_s=budget.max_wall_s,
                    spent=Spend(calls=spent.calls, tokens=spent.tokens, usd=spent.cost_usd))
    recording = RecordingChatModel(chat, store, run_id, budget=budget, use_cache=use_cache)
    generator = GenerationAgent(recording, target, problem.source, reference, request.max_output_tokens,
                                request.temperature)
    analyst = AnalystAgent(recording, target, problem.source, request.send_images, temperature=request.temperature)
    options = request.evaluation_options()
    with tempfile.TemporaryDirectory(prefix=f"kforge-run{run_id}-") as workdir, WorkerPool(spares=1) as pool, \
            _marking_status(store, run_id):
        evaluator = _file_evaluator(problem, options, Path(workdir), pool, store, run_id, on_event)
        profiler = _candidate_profiler(problem, options, Path(workdir), pool, store, on_event)
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
        confirmation = _settle_best(store, run_id, result, problem, options, Path(workdir), pool, on_event)
    return OptimizeOutcome(run_id, result, confirmation)


@contextmanager
def _marking_status(store: Store, run_id: int) -> Iterator[None]:
    """Mark the run finished when the block completes, interrupted on Ctrl-C, failed on anything else."""
    status = "failed"
    try:
        yield
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.finish_run(run_id, status)  # type: ignore[arg-type]


def _settle_best(store: Store, run_id: int, result: LoopResult | StagedResult, problem: Problem,
                 options: EvalOptions, workdir: Path, pool: WorkerPool, on_event: LoopEvent | None) -> Verdict | None:
    """Record the pipeline's best (faster beyond noise), so that `kforge show` and `export` name the same
    attempt, then judge it again with the reference timed beside it (pipelines/confirm.py)."""
    if result.best is None:
        return None
    store.record_best(run_id, result.best.attempt_id)
    return confirm_best(store, run_id, problem.path, result.best, _candidate_file(workdir, result.best.source),
                        options, pool, on_event)


def check_builtin(request: OptimizeRequest) -> None:
    """Raise LoweringError (one line) unless the builtin engine can write candidates for the request."""
    if request.pipeline != "loop":
        raise OptimizeError("the builtin engine runs on its own: drop --pipeline staged, or pass --model")
    propose(load_problem(request.problem), request.language, limit=1,
            vendor_gemm=request.evaluation_options().policy.vendor_gemm_passes)


def run_builtin(store: Store, run_id: int, request: OptimizeRequest,
                on_event: LoopEvent | None = None) -> OptimizeOutcome:
    """Run (or resume) the builtin engine for `run_id` (no LLM); LoweringError when it cannot lower the problem."""
    problem = load_problem(request.problem)
    options = request.evaluation_options()
    with tempfile.TemporaryDirectory(prefix=f"kforge-run{run_id}-") as workdir, WorkerPool(spares=1) as pool, \
            _marking_status(store, run_id):
        evaluator = _file_evaluator(problem, options, Path(workdir), pool, store, run_id, on_event)
        engine = BuiltinRun(store, run_id, request.platform, request.language, evaluator, on_event,
                            prebuild=_prebuilder(options, Path(workdir), on_event))
        result = engine.run(problem, vendor_gemm=options.policy.vendor_gemm_passes)
        confirmation = _settle_best(store, run_id, result, problem, options, Path(workdir), pool, on_event)
    return OptimizeOutcome(run_id, result, confirmation)


def _builtin_start(problem: Problem, request: OptimizeRequest, store: Store, run_id: int,
                   evaluator: Callable[[str], Verdict], on_event: LoopEvent | None) -> str | None:
    """The builtin engine's best kernel, the first one the model refines; None when it has none."""
    if not request.builtin_start:
        return None
    engine = BuiltinRun(store, run_id, request.platform, request.language, evaluator, on_event)
    try:
        result = engine.run(problem, vendor_gemm=request.evaluation_options().policy.vendor_gemm_passes, variants=1)
    except LoweringError as exc:
        if on_event:
            on_event(f"{exc} (the model starts from scratch)")
        return None
    return result.best.source if result.best is not None else None


def _staged_pipeline(request: OptimizeRequest, problem: Problem, chat: RecordingChatModel,
                     evaluator: Callable[[str], Verdict], profiler: Callable[[AttemptRecord], ProfileView],
                     store: Store, run_id: int, loop: KForgeLoop, on_event: LoopEvent | None) -> StagedPipeline:
    target = Target(request.platform, request.language)
    agents = StagedAgents(
        analyzer=AnalyzerAgent(chat, target, problem.source, request.send_images, temperature=request.temperature),
        planner=PlannerAgent(chat, target, temperature=request.temperature),
        writer=StageWriter(chat, target, problem.source, request.max_output_tokens, request.temperature))
    device = get_platform(request.platform).describe().get("device")
    knowledge = KnowledgeAccess.load(request.platform, request.language, device, problem.source,
                                     request.staged.knowledge_tokens)
    engine = stage_engine(problem, request.evaluation_options().policy.vendor_gemm_passes, on_event) \
        if request.builtin_start else None
    return StagedPipeline(agents=agents, knowledge=knowledge, evaluate=evaluator, profile=profiler, store=store,
                          run_id=run_id, settings=request.staged, functional_pass=loop.run, on_event=on_event,
                          engine=engine)


def _file_evaluator(problem: Problem, options: EvalOptions, workdir: Path, pool: WorkerPool, store: Store,
                    run_id: int, on_event: LoopEvent | None) -> Callable[[str], Verdict]:
    """Judges a candidate's source; every timed verdict is compared with the run's one set of baselines."""
    baselines = RunBaselines(store, run_id, problem.path, options, pool, on_event)
    candidate_options = baselines.candidate_options

    def evaluate_source(source: str) -> Verdict:
        verdict = evaluate(problem.path, _candidate_file(workdir, source), candidate_options, pool=pool)
        return baselines.attach(verdict)

    return evaluate_source


def _prebuilder(options: EvalOptions, workdir: Path, on_event: LoopEvent | None) -> Callable[[list[str]], None]:
    """Compiles candidates' sources into the build cache their evaluations read, as many at once as there are
    cores; a failed build is left for the evaluation to report."""
    def prebuild(sources: list[str]) -> None:
        platform = get_platform(options.platform)
        parallel = max(1, min(len(sources), os.cpu_count() or 1))
        with Prebuilder(platform, options.cache_dir, parallel=parallel, policy=options.policy,
                        timeout_s=options.build_timeout_s) as builder:
            futures = [builder.submit(_candidate_file(workdir, source)) for source in sources]
            built = sum(future.result().ok for future in futures)
        if on_event:
            on_event(f"builtin: {built} of {len(sources)} variants compiled")

    return prebuild


def _candidate_profiler(problem: Problem, options: EvalOptions, workdir: Path, pool: WorkerPool, store: Store,
                        on_event: LoopEvent | None) -> Callable[[AttemptRecord], ProfileView]:
    def profile(record: AttemptRecord) -> ProfileView:
        assert record.verdict is not None
        path = _candidate_file(workdir, record.source)
        try:
            result = profile_candidate(problem.path, path, options, pool, runtime_ms=record.verdict.runtime_ms)
        except (ProfileFailed, ValueError) as exc:
            if on_event:
                on_event(f"profiling failed ({str(exc).splitlines()[0][:120]}); the analyst gets timings only")
            return timing_profile(record.verdict)
        store.record_profile(record.attempt_id, result.profile.source, result.profile.model_dump(mode="json"),
                             result.png)
        return ProfileView(text=result.text + "\n" + timing_profile(record.verdict).text, png=result.png)

    return profile


def _candidate_file(workdir: Path, source: str) -> Path:
    """The candidate as a file, named by its content: the harness reads solutions from files."""
    path = workdir / f"candidate_{source_hash(source)[:16]}.py"
    path.write_text(source)
    return path


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
           "run_builtin", "run_optimize", "start_run"]
