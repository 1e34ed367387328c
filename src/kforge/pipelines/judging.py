"""Attempts as a pipeline sees them: recorded in the store the moment they exist, judged once.

Shared by the KForge loop and the staged pipeline. A resumed run finds an attempt by its source and reuses
the verdict the store holds instead of evaluating it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kforge.agents.analyst import ProfileView
from kforge.agents.feedback import AttemptOutcome, generation_feedback, verdict_feedback
from kforge.agents.generator import Phase, Proposal
from kforge.agents.targets import Target
from kforge.pipelines.events import Reporter
from kforge.store import Attempt, Store, text_hash
from kforge.verify.verdict import Evaluator, Verdict

# The outcome stored for a candidate the knowledge base rejected before any hardware run.
KB_REJECTED = "rejected_by_knowledge_base"


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt as the pipeline saw it."""

    attempt_id: int  # the store's key, for lineage and records
    number: int  # its number within the run (1, 2, 3...): what the progress lines call it
    phase: Phase
    round: int
    outcome: AttemptOutcome
    source: str
    verdict: Verdict | None
    note: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    cached_llm: bool = False
    stage: str | None = None

    @property
    def runtime_ms(self) -> float | None:
        return self.verdict.runtime_ms if self.verdict else None


def usage_of(proposal: Proposal) -> dict[str, Any]:
    """The tokens and cost of the call behind a proposal, as stored with its attempt's evaluation."""
    usage = proposal.completion.usage
    return {"prompt_tokens": usage.prompt_tokens if usage else 0,
            "completion_tokens": usage.completion_tokens if usage else 0,
            "cost_usd": proposal.completion.cost_usd, "cached_llm": proposal.completion.cached}


@dataclass(frozen=True)
class Lineage:
    """Where an attempt sits: its phase, round, parent, stage, and who made it."""

    phase: Phase
    round: int
    parent: int | None
    made_by: str
    stage: str | None = None


class AttemptJudge:
    def __init__(self, store: Store, run_id: int, target: Target, evaluate: Evaluator,
                 say: Reporter, on_record: Callable[[AttemptRecord], None]) -> None:
        self.store = store
        self.run_id = run_id
        self.target = target
        self.evaluate = evaluate
        self.say = say
        self.on_record = on_record

    def proposal(self, proposal: Proposal, where: Lineage) -> AttemptRecord:
        """Judge a proposal: a reply without usable code is a generation failure, code goes to the harness."""
        if proposal.source is None:
            return self.unusable(proposal, where)
        return self.judge(proposal.source, where, usage_of(proposal))

    def unusable(self, proposal: Proposal, where: Lineage) -> AttemptRecord:
        note = generation_feedback(proposal.problem or "no code")
        return self._without_hardware(proposal.completion.text, where, AttemptOutcome.GENERATION_FAILURE,
                                      {"verdict": AttemptOutcome.GENERATION_FAILURE.value, "reason": note},
                                      note, usage_of(proposal))

    def reject(self, source: str, where: Lineage, note: str, details: dict[str, Any],
               tokens: dict[str, Any]) -> AttemptRecord:
        """A candidate the knowledge base rejected: recorded with its reasons, never run."""
        return self._without_hardware(source, where, AttemptOutcome.REJECTED,
                                      {"verdict": KB_REJECTED, "reason": note, **details}, note, tokens)

    def judge(self, source: str, where: Lineage, tokens: dict[str, Any] | None = None,
              repeat: bool = True) -> AttemptRecord:
        """The attempt of `source`, judged by the harness or, when judged before, as the store holds it; `repeat`
        False says nothing of one judged before (whoever handed it over said its line)."""
        attempt = self._attempt(source, where)
        stored = self.store.evaluation_of(attempt.id)
        if stored is not None and "platform" in stored.verdict:
            verdict = Verdict.model_validate({k: v for k, v in stored.verdict.items()
                                              if k not in ("correct", "llm_usage")})
        else:
            self.say(f"evaluating attempt {attempt.number}")
            verdict = self.evaluate(source)
            self.store.record_evaluation(attempt.id, {**verdict.to_json_dict(), "llm_usage": tokens or {}})
        outcome = AttemptOutcome.of(verdict)
        note = "" if outcome == AttemptOutcome.CORRECT else verdict_feedback(verdict)
        record = AttemptRecord(attempt.id, attempt.number, where.phase, where.round, outcome, source, verdict, note,
                               **(tokens or {}), stage=where.stage)
        if stored is not None and not repeat:
            self.on_record(record)
            return record
        return self._report(record, again=stored is not None)

    def _without_hardware(self, source: str, where: Lineage, outcome: AttemptOutcome, evaluation: dict[str, Any],
                          note: str, tokens: dict[str, Any]) -> AttemptRecord:
        attempt = self._attempt(source, where)
        if self.store.evaluation_of(attempt.id) is None:
            self.store.record_evaluation(attempt.id, {**evaluation, "llm_usage": tokens})
        kept = source if outcome != AttemptOutcome.GENERATION_FAILURE else ""
        return self._report(AttemptRecord(attempt.id, attempt.number, where.phase, where.round, outcome, kept, None,
                                          note, **tokens, stage=where.stage))

    def _attempt(self, source: str, where: Lineage) -> Attempt:
        existing = self.store.find_attempt(self.run_id, text_hash(source))
        if existing is not None:
            return existing
        return self.store.record_attempt(self.run_id, source=source, language=self.target.language,
                                         platform=self.target.platform, made_by=f"{where.made_by}:{where.phase}",
                                         round=where.round, parent_attempt_id=where.parent, stage=where.stage)

    def _report(self, record: AttemptRecord, again: bool = False) -> AttemptRecord:
        """Keep `record`, and say how it went: a line of its own, or only a passing status for an attempt judged
        before (a resumed run, or the engine's kernel the model starts from), whose line was said then."""
        self.on_record(record)
        runtime = f" {record.runtime_ms:.4g} ms" if record.runtime_ms else ""
        stage = f" {record.stage}" if record.stage else ""
        text = f"attempt {record.number} ({record.phase}{stage}): {record.outcome.value}{runtime}"
        if again:
            self.say(f"{text} (judged before)")
        else:
            self.say.line("attempt", text)
        return record


# Profiles a judged kernel for an analyst (or the staged pipeline's analyzer).
Profiler = Callable[["AttemptRecord"], ProfileView]
# The profile kind under which the view an analyst read is kept, for a resumed run to reuse.
ANALYSIS_VIEW = "analysis_view"


def analysis_view(store: Store, profile: Profiler, kernel: AttemptRecord) -> ProfileView:
    """The profile view of `kernel` an analyst reads: the stored one when a run is resumed, else a fresh one,
    stored. A resumed run then asks its analyst the same question, and the LLM cache answers it."""
    for stored in store.profiles_of(kernel.attempt_id):
        if stored.kind == ANALYSIS_VIEW:
            return ProfileView(text=str(stored.data["text"]), png=stored.png)
    view = profile(kernel)
    store.record_profile(kernel.attempt_id, ANALYSIS_VIEW, {"text": view.text}, view.png)
    return view
