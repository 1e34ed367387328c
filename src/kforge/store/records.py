"""What the store hands back: small frozen records, one per table row, plus run totals."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

RunStatus = Literal["running", "finished", "failed", "interrupted"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "failed", "interrupted")


def text_hash(text: str) -> str:
    """The hex SHA-256 of a text: how sources and problems are identified across runs."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Owner:
    """The process that runs a run (store/owner.py). `started` is only ever compared with what `process_start`
    gives for the same pid: clock ticks since boot on Linux, else psutil's creation time in milliseconds."""

    pid: int
    started: int


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    created: datetime
    command: str
    problem_path: str | None
    problem_hash: str | None
    platform: str | None
    language: str | None
    model: str | None
    settings: dict[str, Any]
    budgets: dict[str, Any]
    status: RunStatus
    finished: datetime | None
    baselines: dict[str, Any] | None = None  # the reference's timings every verdict of the run is compared with
    best_attempt_id: int | None = None  # the attempt the run's pipeline chose (Store.record_best)
    # The best judged again when the run ended: {"attempt_id": ..., "verdict": ...} (Store.record_confirmation)
    confirmation: dict[str, Any] | None = None
    stop_reason: str | None = None  # why it ended (Store.finish_run), None while it runs
    # The process that started or last resumed it; None in a store from before owners were recorded. A run
    # recorded `running` whose owner is gone has `status` "interrupted" (store/owner.py).
    owner: Owner | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    id: int  # the store's key (foreign keys, lineage); users never see it
    run_id: int
    number: int  # 1, 2, 3... within its run, in the order attempts were recorded: how a person names it
    parent_attempt_id: int | None
    made_by: str
    round: int
    source: str
    language: str
    platform: str
    source_hash: str
    created: datetime
    stage: str | None = None  # the staged pipeline's stage it was made for; None elsewhere


@dataclass(frozen=True, slots=True)
class Evaluation:
    id: int
    attempt_id: int
    verdict: dict[str, Any]
    outcome: str
    runtime_ms: float | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    created: datetime

    @property
    def correct(self) -> bool:
        return self.outcome == "correct"


@dataclass(frozen=True, slots=True)
class ScoredAttempt:
    """An attempt with the evaluation that scored it."""

    attempt: Attempt
    evaluation: Evaluation


@dataclass(frozen=True, slots=True)
class LLMCall:
    id: int
    run_id: int
    attempt_id: int | None
    model: str
    provider: str
    request: dict[str, Any]
    response_text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float
    cache_hit: bool
    request_hash: str
    created: datetime


@dataclass(frozen=True, slots=True)
class Profile:
    id: int
    attempt_id: int
    kind: str
    data: dict[str, Any]
    png: bytes | None
    created: datetime


StageStatus = Literal["accepted", "skipped"]


@dataclass(frozen=True, slots=True)
class StageStep:
    """One stage as the staged pipeline ran it: its input kernel, its accepted output (if any), its details."""

    id: int
    run_id: int
    position: int
    stage: str
    input_attempt_id: int | None
    output_attempt_id: int | None
    status: StageStatus
    detail: dict[str, Any]
    created: datetime


@dataclass(frozen=True, slots=True)
class RunCosts:
    """What a run's LLM calls used. Cache hits are counted apart: they cost nothing."""

    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    unpriced_calls: int  # calls whose model has no price: their cost is missing from cost_usd

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
