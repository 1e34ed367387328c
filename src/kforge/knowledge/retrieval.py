"""Choosing and rendering entries for one prompt, within a token budget, saying what was left out."""

from __future__ import annotations

from dataclasses import dataclass, field

import jinja2

from kforge.knowledge.entries import Constraint, Pattern, WorkedExample
from kforge.templating import template_environment

Entry = Constraint | Pattern | WorkedExample


@dataclass(frozen=True)
class Retrieval:
    text: str
    entry_ids: list[str] = field(default_factory=list)
    #: ids that matched but did not fit the budget, in rank order
    omitted: list[str] = field(default_factory=list)


def estimate_tokens(text: str) -> int:
    """Tokens in `text`, estimated as one per four characters (rounded up).

    English prose and code average three to four and a half characters per token with current BPE
    tokenizers, so this slightly overestimates for prose: a budget met here is met by the model's count.
    """
    return (len(text) + 3) // 4


def rank(constraints: list[Constraint], patterns: list[Pattern], examples: list[WorkedExample], stage: str,
         features: frozenset[str]) -> list[Entry]:
    """Matching entries, best first: errors, warnings, feature-specific then general patterns, examples."""
    chosen_constraints = [c for c in constraints if c.matches(features)]
    chosen_constraints.sort(key=lambda c: c.severity != "error")  # stable: file order within a severity
    chosen_patterns = [p for p in patterns if p.stage == stage and p.matches(features)]
    chosen_patterns.sort(key=lambda p: not p.applies_to)
    chosen_examples = [e for e in examples if e.shows(stage) and e.matches(features)]
    chosen_examples.sort(key=lambda e: not e.applies_to)
    return [*chosen_constraints, *chosen_patterns, *chosen_examples]


def fit(ranked: list[Entry], heading: str, token_budget: int) -> Retrieval:
    """The longest prefix of `ranked` that fits `token_budget` with its omission line.

    A prefix (rather than skipping a long entry to fit a shorter one) keeps the promise that everything
    omitted ranks below everything included. When the line naming every omitted id would itself not fit,
    a shorter line gives only their count; `omitted` always lists them all.
    """
    if token_budget <= 0:
        raise ValueError(f"token_budget must be positive, got {token_budget}")
    blocks = [_render(entry) for entry in ranked]
    for kept in range(len(ranked), -1, -1):
        omitted = [entry.id for entry in ranked[kept:]]
        for note in _omission_notes(omitted):
            text = _join(heading, blocks[:kept], note)
            if estimate_tokens(text) <= token_budget:
                return Retrieval(text=text, entry_ids=[entry.id for entry in ranked[:kept]], omitted=omitted)
    omitted = [entry.id for entry in ranked]
    return Retrieval(text=_omission_notes(omitted)[-1], entry_ids=[], omitted=omitted)


def _omission_notes(omitted: list[str]) -> list[str]:
    if not omitted:
        return [""]
    return [f"[Left out for the token budget: {', '.join(omitted)}.]",
            f"[Left out for the token budget: {len(omitted)} entries.]"]


def _join(heading: str, blocks: list[str], note: str) -> str:
    parts = [heading, *blocks] if blocks else []
    if note:
        parts.append(note)
    return "\n\n".join(parts).strip() + "\n" if parts else ""


def _render(entry: Entry) -> str:
    kind = {Constraint: "constraint", Pattern: "pattern", WorkedExample: "example"}[type(entry)]
    return _templates().get_template(f"{kind}.j2").render(entry=entry).strip()


def _templates() -> jinja2.Environment:
    return template_environment("kforge", "data/knowledge/templates")
