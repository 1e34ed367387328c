"""An optimize run's request: built from what a user asked for and checked once (`build_request`, one error type
with a one-line message), recorded with the run (`start_run`), and read back to resume it (`resume_request`,
with what a resume may say anew: `ResumeChanges`). Every command that optimizes (`kforge optimize`, a suite) goes
through here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from kforge.agents.planner import StageSelectionError, select_stages
from kforge.llm.budget import Budget
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
    base_url: str | None = None  # the model's server; None: its provider's own
    out: Path | None = None  # where the best is written when the run ends (kforge optimize --out)
    min_speedup: float | None = None  # the speedup over eager the best needs to count as a success

    def evaluation_options(self) -> EvalOptions:
        """The harness options of every evaluation in the run: the request's target, and its policy."""
        policy = self.eval_options.policy
        if self.allow_vendor_gemm:
            policy = policy.allowing_vendor_gemm()
        return self.eval_options.model_copy(update={"platform": self.platform, "language": self.language,
                                                    "policy": policy})

    def for_record(self) -> dict[str, Any]:
        """The request as JSON data; its paths whole, so that a resume from another directory finds them."""
        return {"problem": _whole(self.problem), "platform": self.platform, "language": self.language,
                "model": self.model, "reference": _whole(self.reference),
                "loop": self.loop.__dict__, "send_images": self.send_images,
                "max_output_tokens": self.max_output_tokens, "temperature": self.temperature,
                "eval": self.eval_options.model_dump(mode="json", exclude={"policy", "cache_dir", "tolerance"}),
                "pipeline": self.pipeline, "staged": self.staged.for_record(),
                "kernel": _whole(self.kernel),
                "kernel_hash": source_hash(self.kernel.read_text()) if self.kernel else None,
                "builtin_start": self.builtin_start, "allow_vendor_gemm": self.allow_vendor_gemm,
                "time_budget_s": self.time_budget_s, "base_url": self.base_url, "out": _whole(self.out),
                "min_speedup": self.min_speedup}

    @classmethod
    def from_record(cls, record: dict[str, Any], eval_options: EvalOptions,
                    base_url: str | None = None) -> OptimizeRequest:
        """The recorded request; `eval_options` and `base_url` stand in for what a record made by an earlier
        kforge lacks."""
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
                   time_budget_s=record.get("time_budget_s"), base_url=record.get("base_url", base_url),
                   out=Path(record["out"]) if record.get("out") else None, min_speedup=record.get("min_speedup"))


@dataclass(frozen=True)
class ResumeChanges:
    """What a resume's command line may say anew, each None (or False) where it says nothing and the run's record
    holds. None of it changes the decisions a resumed run repeats: where the best goes, the bar it must pass, the
    model's server (one that moved), how long it may search, and whether the sandbox must be whole (it may only
    tighten)."""

    out: Path | None = None
    min_speedup: float | None = None
    base_url: str | None = None
    time_budget_s: float | None = None
    require_sandbox: bool = False

    def applied_to(self, recorded: OptimizeRequest) -> OptimizeRequest:
        given = {name: value for name, value in self._values().items() if value is not None}
        request = replace(recorded, **given)
        if self.require_sandbox:
            request = replace(request, eval_options=request.eval_options.model_copy(update={"require_sandbox": True}))
        return request

    def notes(self, recorded: OptimizeRequest) -> list[str]:
        """One line for each recorded setting this resume replaces."""
        return [f"{_FLAGS[name]} {value} for this resume (the run recorded {getattr(recorded, name)})"
                for name, value in self._values().items()
                if value is not None and getattr(recorded, name) not in (None, value)]

    def _values(self) -> dict[str, Any]:
        return {"out": self.out.resolve() if self.out else None, "min_speedup": self.min_speedup,
                "base_url": self.base_url, "time_budget_s": self.time_budget_s}


_FLAGS = {"out": "--out", "min_speedup": "--min-speedup", "base_url": "--base-url", "time_budget_s": "--time-budget"}


def start_run(store: Store, request: OptimizeRequest, budget: Budget | None = None) -> int:
    """Record a run of `request` under `budget`'s limits; its id."""
    problem = load_problem(request.problem)
    run = store.create_run(command="optimize", problem_path=str(problem.path), problem_hash=problem.source_hash,
                           platform=request.platform, language=request.language, model=request.model,
                           settings=request.for_record(), budgets=_limits(budget) if budget else None)
    return run.id


def resume_request(store: Store, run_id: int, eval_options: EvalOptions,
                   base_url: str | None = None) -> OptimizeRequest:
    """The request a run was started with, so resuming it repeats the same work (`OptimizeRequest.from_record`
    for `eval_options` and `base_url`)."""
    run = store.get_run(run_id)
    if run is None:
        raise OptimizeError(f"no run {run_id} in the store")
    if run.command != "optimize":
        raise OptimizeError(f"run {run_id} was made by {run.command!r}, not optimize")
    request = OptimizeRequest.from_record(run.settings, eval_options, base_url)
    for path in (request.problem, request.reference, request.kernel):
        if path is not None and not path.is_file():
            raise OptimizeError(f"run {run_id} started with {path}, which is not there any more")
    if source_hash(request.problem.read_text()) != run.problem_hash:
        raise OptimizeError(f"the problem file {request.problem} changed since run {run_id} started")
    if request.kernel and source_hash(request.kernel.read_text()) != run.settings.get("kernel_hash"):
        raise OptimizeError(f"the starting kernel {request.kernel} changed since run {run_id} started")
    return request


def resumed_budget(store: Store, run_id: int, current: Budget) -> Budget:
    """The limits run `run_id` started with, each replaced by one `current` sets (a limit given again, by a flag,
    the environment or kforge.toml, wins: that is how a run stopped by its budget goes on)."""
    run = store.get_run(run_id)
    recorded = run.budgets if run is not None else {}
    chosen: dict[str, Any] = {name: value if value is not None else recorded.get(name)
                              for name, value in _limits(current).items()}
    return Budget(**chosen)


def _limits(budget: Budget) -> dict[str, Any]:
    return {"max_calls": budget.max_calls, "max_tokens": budget.max_tokens, "max_usd": budget.max_usd,
            "max_wall_s": budget.max_wall_s}


def _whole(path: Path | None) -> str | None:
    return str(path.resolve()) if path is not None else None


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
