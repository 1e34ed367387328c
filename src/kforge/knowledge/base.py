"""A target's knowledge base: its entries, retrieval for a prompt, and the static check of a candidate."""

from __future__ import annotations

from dataclasses import dataclass, field

from kforge.knowledge.entries import Constraint, Pattern, WorkedExample
from kforge.knowledge.limits import DeviceLimits
from kforge.knowledge.retrieval import Retrieval, fit, rank
from kforge.knowledge.source import CandidateSource
from kforge.knowledge.stages import STAGE_TITLES, STAGES
from kforge.knowledge.validators import run_validator
from kforge.knowledge.violations import Violation


@dataclass
class KnowledgeBase:
    platform: str
    language: str
    constraints: list[Constraint] = field(default_factory=list)
    patterns: list[Pattern] = field(default_factory=list)
    examples: list[WorkedExample] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.constraints) + len(self.patterns) + len(self.examples)

    def retrieve(self, stage: str, features: frozenset[str], token_budget: int = 2000) -> Retrieval:
        """The constraints, then `stage`'s patterns for `features`, then worked examples, within the budget.

        What does not fit is listed in `omitted` and named on the last line of `text`.
        """
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; choose one of {', '.join(STAGES)}")
        ranked = rank(self.constraints, self.patterns, self.examples, stage, frozenset(features))
        heading = (f"Hardware knowledge for {self.language} on {self.platform} "
                   f"(stage: {STAGE_TITLES[stage]})")
        return fit(ranked, heading, token_budget)

    def check(self, source: str, limits: DeviceLimits) -> list[Violation]:
        """Every constraint's validator run on a candidate's source, statically; errors first, then by line.

        The source is parsed, never imported or run. A candidate that does not parse as Python gives
        a single `python_syntax` error.
        """
        view = CandidateSource(source)
        if view.syntax_error is not None:
            return [Violation("python_syntax", "error", view.syntax_error[0], view.syntax_error[1])]
        found: list[Violation] = []
        for constraint in self.constraints:
            if constraint.validator is None:
                continue
            for finding in run_validator(constraint.validator, view, limits):
                found.append(Violation(constraint.id, finding.severity or constraint.severity, finding.message,
                                       finding.line))
        return sorted(found, key=lambda v: (v.severity != "error", v.line or 0, v.constraint_id))
