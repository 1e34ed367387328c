"""CoVeR for one stage of the staged pipeline: generate, check, verify, refine.

1. The stage writer rewrites the stage's input kernel for the stage.
2. The candidate is checked against the knowledge base's machine-checkable constraints before any hardware
   run: an error-level violation rejects it (recorded as an attempt with outcome
   `rejected_by_knowledge_base`) and goes back to the writer; warnings only join the feedback.
3. The harness verifies it against the original PyTorch reference (never against the previous stage, so
   error cannot drift from stage to stage) and times it.
4. It is accepted only when correct and faster than the stage's input beyond noise (`is_faster`).
   Otherwise the failure is fed back and the writer tries again, up to `retries` more times.

Every attempt of a stage points at the stage's input as its parent, and carries the stage's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kforge.agents.analyzer import Issue
from kforge.agents.feedback import AttemptOutcome
from kforge.agents.generator import Proposal
from kforge.agents.stage_writer import StageRequest
from kforge.knowledge import Retrieval, Violation
from kforge.pipelines.events import Reporter
from kforge.pipelines.judging import AttemptJudge, AttemptRecord, Lineage, usage_of
from kforge.pipelines.stage_knowledge import Checker
from kforge.proposer import Proposer
from kforge.verify.compare import is_faster


@dataclass(frozen=True)
class StageResult:
    stage: str
    input: AttemptRecord
    attempts: tuple[AttemptRecord, ...]
    accepted: AttemptRecord | None
    reason: str


class Cover:
    def __init__(self, *, writer: Proposer[StageRequest, Proposal], check: Checker, judge: AttemptJudge, retries: int,
                 say: Reporter) -> None:
        self.writer = writer
        self.check = check
        self.judge = judge
        self.retries = retries
        self.say = say

    def run(self, stage: str, stage_input: AttemptRecord, issues: Sequence[Issue],
            knowledge: Retrieval) -> StageResult:
        assert stage_input.verdict is not None
        request = StageRequest(stage, stage_input.source, stage_input.runtime_ms, stage_input.verdict.eager_ms,
                               tuple(issues), knowledge.text)
        attempts: list[AttemptRecord] = []
        tries = self.retries + 1
        for number in range(1, tries + 1):
            self.say.line("stage", f"stage {stage}: try {number} of {tries}")
            where = Lineage("optimize" if number == 1 else "repair", number, stage_input.attempt_id, stage, stage)
            record, feedback = self._try(self.writer.propose(request), where, stage_input)
            attempts.append(record)
            if feedback is None:
                reason = f"accepted on try {number}: {stage_input.runtime_ms:.4g} -> {record.runtime_ms:.4g} ms"
                self.say.line("stage", f"stage {stage}: {reason}")
                return StageResult(stage, stage_input, tuple(attempts), record, reason)
            request = replace(request, previous_source=record.source or None, feedback=feedback)
        reason = f"skipped: no candidate was correct and faster in {tries} tries"
        self.say.line("stage", f"stage {stage}: {reason}")
        return StageResult(stage, stage_input, tuple(attempts), None, reason)

    def _try(self, proposal: Proposal, where: Lineage, stage_input: AttemptRecord) -> tuple[AttemptRecord, str | None]:
        """The attempt, and the feedback for the next try (None: accepted)."""
        if proposal.source is None:
            record = self.judge.unusable(proposal, where)
            return record, record.note
        violations = list(self.check(proposal.source))
        errors = [v for v in violations if v.severity == "error"]
        advice = _violations_text("The knowledge base also warns:", [v for v in violations if v not in errors])
        if errors:
            note = _violations_text("The candidate breaks rules of the target, found before running it:", errors)
            details = {"violations": [{"constraint_id": v.constraint_id, "severity": v.severity,
                                       "message": v.message, "line": v.line} for v in violations]}
            record = self.judge.reject(proposal.source, where, note + advice, details, usage_of(proposal))
            self.say.line("attempt", f"attempt {record.number}: rejected by the knowledge base "
                     f"({', '.join(v.constraint_id for v in errors)}), not run")
            return record, record.note
        record = self.judge.judge(proposal.source, where, usage_of(proposal))
        if record.outcome != AttemptOutcome.CORRECT:
            return record, record.note + advice
        assert record.verdict is not None and stage_input.verdict is not None
        if is_faster(record.verdict, stage_input.verdict):
            return record, None
        return record, _not_faster(record, stage_input) + advice


def _violations_text(heading: str, violations: Sequence[Violation]) -> str:
    if not violations:
        return ""
    lines = [f"- {v.constraint_id}{f' (line {v.line})' if v.line else ''}: {v.message}" for v in violations]
    return "\n".join([heading, *lines]) + "\n"


def _not_faster(record: AttemptRecord, stage_input: AttemptRecord) -> str:
    if record.runtime_ms is None or stage_input.runtime_ms is None:
        return "The candidate is correct, but it could not be timed here, so it cannot be shown to be faster.\n"
    return (f"The candidate is correct but not faster than the stage's input beyond measurement noise: "
            f"{record.runtime_ms:.4g} ms against {stage_input.runtime_ms:.4g} ms (it needs to be more than 2% "
            f"faster, and more than twice the standard error of the difference). Make a bigger change for "
            f"this stage.\n")
