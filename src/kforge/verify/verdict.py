"""The result types of an evaluation: what `verify.evaluate` returns and `kforge eval --json` prints."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, field_validator

# What a verdict carries from a candidate (exception text, compiler output, a dying worker's log) is capped before
# it is stored, shown or sent to a model as feedback: a candidate decides what its errors say.
MAX_REASON_CHARS = 4000
MAX_WARNING_CHARS = 600
MAX_WARNINGS = 20


def capped(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"


def capped_warnings(warnings: list[str]) -> list[str]:
    kept = [capped(w, MAX_WARNING_CHARS) for w in warnings[:MAX_WARNINGS]]
    if len(warnings) > MAX_WARNINGS:
        kept.append(f"[... {len(warnings) - MAX_WARNINGS} more warnings cut]")
    return kept


class Outcome(str, Enum):
    """The one-word judgement of a candidate."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    REJECTED = "rejected"


class TimingStats(BaseModel):
    """Summary of repeated timed calls, in milliseconds."""

    model_config = ConfigDict(frozen=True)

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    iqr_ms: float = Field(description="interquartile range of the per-call times")
    repeats: int
    host_bound_share: float | None = Field(
        default=None, description="share of calls whose figure was the host's issue time, not the device's; "
                                  "None where the platform does not tell them apart")

    @property
    def relative_spread(self) -> float:
        """Interquartile range over the median: a unitless noise figure."""
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else 0.0


def speedup(baseline: TimingStats | None, candidate: TimingStats | None) -> float | None:
    """How many times faster the candidate's median is than the baseline's; None without both."""
    if baseline is None or candidate is None or candidate.median_ms <= 0:
        return None
    return baseline.median_ms / candidate.median_ms


class Baselines(BaseModel):
    """The reference's own timings, eager and under torch.compile, measured once for many verdicts to share
    (`verify.evaluate.measure_baselines`): a run's candidates are then all compared with the same figures."""

    model_config = ConfigDict(frozen=True)

    eager: TimingStats | None = None
    compiled: TimingStats | None = None
    warnings: list[str] = Field(default_factory=list)

    _cap_warnings = field_validator("warnings")(capped_warnings)


class Verdict(BaseModel):
    """Everything the harness concluded about one candidate."""

    model_config = ConfigDict(frozen=True, use_enum_values=True)

    verdict: Outcome
    reason: str
    rule: str | None = Field(default=None, description=(
        "the policy rule that fired, when rejected; for an incorrect verdict, the check beyond the outputs that "
        "failed (dynamic.state: the module's buffers after the forward)"))
    platform: str
    language: str
    runtime_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_eager_interval: tuple[float, float] | None = Field(default=None, description=(
        "95% interval of speedup_vs_eager, where eager was timed in rounds taken in turn with the candidate "
        "(verify/ratio.py); None where the baseline was timed apart, as a run's shared baselines are"))
    speedup_vs_compile_interval: tuple[float, float] | None = Field(default=None, description=(
        "the same for speedup_vs_compile"))
    machine_busy: str | None = Field(default=None, description=(
        "a line saying other work loaded the machine while it timed (verify/machine_load.py); None when quiet"))
    timing_rounds: int | None = Field(default=None, description=(
        "rounds the timed series were taken in, those added while an interval was wide included"))
    max_abs_error: float | None = None
    max_rel_norm_error: float | None = None
    trials: int = 0
    timing: TimingStats | None = None
    eager_timing: TimingStats | None = None
    compile_timing: TimingStats | None = None
    build_s: float | None = Field(default=None, description="seconds spent compiling the candidate")
    eval_s: float | None = Field(default=None, description="seconds spent evaluating, builds excluded")
    timing_s: float | None = Field(default=None, description="seconds of eval_s spent in timing loops")
    outside_ms: float | None = Field(default=None, description=(
        "milliseconds a call in the quickest batch of calls the harness timed end to end on its own clock, out "
        "of the candidate's reach (a cross-check of runtime_ms, which is measured inside the worker)"))
    input_seed: int | None = Field(default=None, description=(
        "base of the seeds the inputs were drawn after: EvalOptions.input_seed (kforge eval --input-seed) "
        "draws the same inputs again"))
    warnings: list[str] = Field(default_factory=list)

    _cap_warnings = field_validator("warnings")(capped_warnings)

    @field_validator("reason")
    @classmethod
    def _cap_reason(cls, reason: str) -> str:
        return capped(reason, MAX_REASON_CHARS)

    @property
    def correct(self) -> bool:
        return self.verdict == Outcome.CORRECT.value

    def with_baselines(self, baselines: Baselines,
                       intervals: Mapping[str, tuple[float, float] | None] | None = None) -> Verdict:
        """This verdict compared with `baselines` instead of whatever reference timings it carried; `intervals`
        (by baseline, "eager" and "compile") where they were timed in turn with this verdict's candidate."""
        intervals = intervals or {}
        return self.model_copy(update={
            "speedup_vs_eager_interval": intervals.get("eager") if baselines.eager else None,
            "speedup_vs_compile_interval": intervals.get("compile") if baselines.compiled else None,
            "eager_ms": baselines.eager.median_ms if baselines.eager else None,
            "compile_ms": baselines.compiled.median_ms if baselines.compiled else None,
            "eager_timing": baselines.eager, "compile_timing": baselines.compiled,
            "speedup_vs_eager": speedup(baselines.eager, self.timing),
            "speedup_vs_compile": speedup(baselines.compiled, self.timing),
            "warnings": capped_warnings([*self.warnings, *(w for w in baselines.warnings if w not in self.warnings)])})

    def to_json_dict(self) -> dict[str, object]:
        data = self.model_dump(mode="json")
        data["correct"] = self.correct
        return data


# Judges a candidate's source text: what the pipelines and the engine's tuner are given to ask the harness with.
Evaluator = Callable[[str], Verdict]
