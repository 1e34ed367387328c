"""An optimize run's request: built from what a user asked for and checked once (`build_request`, one error type
with a one-line message), recorded with the run (`start_run`), and read back to resume it (`resume_request`).
Every command that optimizes (`kforge optimize`, a suite) goes through here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from kforge.agents.planner import StageSelectionError, select_stages
from kforge.pipelines.loop import LoopSettings
from kforge.pipelines.staged import StagedSettings
from kforge.platforms import PlatformError, get_platform
from kforge.problem import ProblemError, SolutionError, load_problem, load_solution, source_hash
from kforge.store import Store
from kforge.verify.evaluate import EvalOptions

Pipeline = Literal["loop", "staged"]  # the KForge loop, or the staged pipeline (Xe-Forge)
BUILTIN = "builtin"  # the model name of the builtin engine (no LLM)
ENGINE_LANGUAGES = ("cpp", "triton")  # what the builtin engine writes


class OptimizeError(ValueError):
    """A request that cannot be carried out; the message is one line for the user."""


@dataclass(frozen=True)
class OptimizeRequest:
    """Everything one optimize run does, as recorded with the run (a resumed run repeats it); made and checked by
    `build_request`, or read back by `resume_request`."""

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
    pipeline: Pipeline = "loop"
    staged: StagedSettings = field(default_factory=StagedSettings)
    kernel: Path | None = None  # the staged pipeline's starting kernel
    builtin_start: bool = True  # the loop starts from the builtin engine's kernel when it can lower the problem
    allow_vendor_gemm: bool = False  # candidates may call the vendor's GEMM/convolution (the engine offers such too)
    time_budget_s: float | None = None  # wall time for the run's search (the engine's tuning, the model's calls)

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
                "builtin_start": self.builtin_start, "allow_vendor_gemm": self.allow_vendor_gemm,
                "time_budget_s": self.time_budget_s}

    @classmethod
    def from_record(cls, record: dict[str, Any], eval_options: EvalOptions) -> OptimizeRequest:
        return cls(problem=Path(record["problem"]), platform=record["platform"], language=record["language"],
                   model=record["model"], loop=LoopSettings(**record["loop"]),
                   eval_options=EvalOptions.model_validate({**eval_options.model_dump(), **record.get("eval", {})}),
                   reference=Path(record["reference"]) if record.get("reference") else None,
                   send_images=bool(record.get("send_images")),
                   max_output_tokens=int(record.get("max_output_tokens", 8192)),
                   temperature=record.get("temperature"), pipeline=_pipeline(record.get("pipeline", "loop")),
                   staged=StagedSettings.from_record(record.get("staged", {})),
                   kernel=Path(record["kernel"]) if record.get("kernel") else None,
                   builtin_start=bool(record.get("builtin_start", False)),
                   allow_vendor_gemm=bool(record.get("allow_vendor_gemm", False)),
                   time_budget_s=record.get("time_budget_s"))



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


def build_request(problem: Path, *, model: str | None, platform: str = "auto", language: str | None = None,
                  pipeline: str = "loop", kernel: Path | None = None, stages: str | None = None,
                  reference: Path | None = None, loop: LoopSettings | None = None, retries: int = 2,
                  eval_options: EvalOptions | None = None, **choices: Any) -> OptimizeRequest:
    """The request for optimizing `problem`, checked: OptimizeError (one line) for anything that cannot run.
    `model` None is the builtin engine; `choices` are the other fields of OptimizeRequest (send_images,
    max_output_tokens, temperature, builtin_start, allow_vendor_gemm)."""
    chosen_pipeline = _pipeline(pipeline)
    if chosen_pipeline == "loop" and (kernel or stages):
        raise OptimizeError("--kernel and --stages belong to the staged pipeline: add --pipeline staged")
    model_name = model or BUILTIN
    try:
        target = get_platform(platform)
        load_problem(problem)
        for given in (reference, kernel):
            if given is not None:
                load_solution(given)
        chosen_language = language or _default_language(target.languages, model_name)
        staged = StagedSettings(stages=select_stages(stages, chosen_language), retries=retries)
    except (PlatformError, ProblemError, SolutionError, StageSelectionError) as exc:
        raise OptimizeError(str(exc)) from None
    if chosen_language not in target.languages:
        raise OptimizeError(f"platform {target.name} does not run {chosen_language} candidates "
                            f"(it runs {', '.join(target.languages)})")
    if model_name == BUILTIN and chosen_pipeline != "loop":
        raise OptimizeError("the builtin engine runs on its own: drop --pipeline staged, or pass --model")
    return OptimizeRequest(problem=problem, platform=target.name, language=chosen_language, model=model_name,
                           loop=loop or LoopSettings(), eval_options=eval_options or EvalOptions(),
                           reference=reference, pipeline=chosen_pipeline, staged=staged, kernel=kernel, **choices)


def _default_language(languages: tuple[str, ...], model: str) -> str:
    """The platform's first language; for the builtin engine, the first one it writes."""
    if model == BUILTIN:
        return next((language for language in languages if language in ENGINE_LANGUAGES), languages[0])
    return languages[0]


def _pipeline(name: str) -> Pipeline:
    if name not in get_args(Pipeline):
        raise OptimizeError(f"unknown pipeline {name!r}; choose loop or staged")
    return name  # type: ignore[return-value]
