"""The analyzer agent (staged pipeline): reads a kernel, its problem and its profile, reports issues by stage.

Each issue names the stage that would fix it and the evidence for it. The reply is read robustly: a JSON
object or list, or a plain list of "stage: issue" lines. An issue for a stage that does not exist, or that
is not open (not selected, or already run), is dropped and the drop is kept as a note, never silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kforge.agents.profile_reader import ProfileReader, ProfileView
from kforge.agents.stage_replies import find_json, stage_of
from kforge.knowledge.stages import STAGE_TITLES
from kforge.llm.messages import Completion, Message

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+)$")
_EVIDENCE = re.compile(r"\s*[(\[]?\s*evidence\s*:\s*(.+?)[)\]]?\s*$", re.IGNORECASE)
_ISSUE_KEYS = ("issue", "description", "problem", "finding")


@dataclass(frozen=True)
class Issue:
    stage: str
    issue: str
    evidence: str = ""


@dataclass(frozen=True)
class Analysis:
    issues: tuple[Issue, ...]
    notes: tuple[str, ...] = ()  # what was dropped from the reply, and why
    completion: Completion | None = None

    @property
    def stages(self) -> list[str]:
        """Stages with at least one issue, in the order the analyzer first named them."""
        return list(dict.fromkeys(issue.stage for issue in self.issues))

    def for_stage(self, stage: str) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if issue.stage == stage)


@dataclass(frozen=True)
class KernelView:
    """A correct kernel as the analyzer sees it."""

    source: str
    runtime_ms: float | None
    eager_ms: float | None
    profile: ProfileView


def parse_issues(reply: str, open_stages: Sequence[str]) -> tuple[list[Issue], list[str]]:
    """Issues for `open_stages` found in a reply, and notes on every issue dropped."""
    data = find_json(reply)
    if isinstance(data, dict):
        data = data.get("issues", [data] if "stage" in data else [])
    items: list[Any] = data if isinstance(data, list) else _bullets(reply)
    issues: list[Issue] = []
    notes: list[str] = []
    for item in items:
        named, text, evidence = _fields(item)
        stage = stage_of(named) if named else None
        if stage is None:
            notes.append(f"dropped an issue for unknown stage {named!r}: {text[:120]}")
        elif stage not in open_stages:
            notes.append(f"dropped an issue for stage {stage}, which is not open in this run: {text[:120]}")
        elif text:
            issues.append(Issue(stage, text, evidence))
    return issues, notes


def _bullets(reply: str) -> list[str]:
    return [match.group(1) for line in reply.splitlines() if (match := _BULLET.match(line))]


def _fields(item: Any) -> tuple[str, str, str]:
    """(stage as written, issue, evidence) of one item of the reply."""
    if isinstance(item, dict):
        named = str(item.get("stage") or item.get("category") or "")
        text = next((str(item[key]) for key in _ISSUE_KEYS if item.get(key)), "")
        return named, " ".join(text.split()), " ".join(str(item.get("evidence") or "").split())
    line = str(item).strip()
    bracket = re.match(r"^\[([^\]]+)\]\s*(.*)$", line)
    named, _, text = (bracket.group(1), "", bracket.group(2)) if bracket else line.partition(":")
    text = text.strip().lstrip(":").strip()
    evidence = _EVIDENCE.search(text)
    if evidence:
        return named.strip().strip("*`"), text[:evidence.start()].strip(), evidence.group(1).strip()
    return named.strip().strip("*`"), text, ""


class AnalyzerAgent(ProfileReader):
    template = "analyzer"
    default_max_tokens = 2048

    def messages(self, kernel: KernelView, open_stages: Sequence[str], history: Sequence[str]) -> list[Message]:
        return self.prompt(kernel.profile, kernel_source=kernel.source.strip(), runtime_ms=kernel.runtime_ms,
                           eager_ms=kernel.eager_ms, stages=[(stage, STAGE_TITLES[stage]) for stage in open_stages],
                           history=list(history))

    def analyze(self, kernel: KernelView, open_stages: Sequence[str], history: Sequence[str] = ()) -> Analysis:
        completion = self.ask(self.messages(kernel, open_stages, history))
        issues, notes = parse_issues(completion.text, open_stages)
        return Analysis(tuple(issues), tuple(notes), completion)
