"""The planner (staged pipeline): orders the stages that have issues. The model proposes, code disposes.

The model's order is a preference; the hard dependencies below are then enforced: of two stages that both
run, the one another depends on runs first, whatever the model said. Stages the model left out are kept,
after the ones it named. With one stage to order there is nothing to ask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from kforge.agents.analyzer import Analysis
from kforge.agents.stage_replies import find_json, stage_of
from kforge.agents.targets import Target
from kforge.agents.templates import render
from kforge.knowledge.stages import STAGE_TITLES, STAGES
from kforge.llm.base import ChatModel
from kforge.llm.messages import Completion, Message

# stage -> the stages that must run before it when both run. Why: the structure of the computation
# (algorithm, fusion, data types) decides what memory access, block pointers and persistence work on;
# device-specific tuning assumes the kernel's final shape; autotuning searches the parameters that remain.
HARD_DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "discovery": ("algorithmic",),
    "dtype": ("algorithmic",),
    "fusion": ("algorithmic",),
    "memory_access": ("algorithmic", "dtype", "fusion"),
    "block_pointers": ("memory_access",),
    "persistent": ("fusion", "memory_access"),
    "device_tuning": ("discovery", "dtype", "fusion", "memory_access", "block_pointers", "persistent"),
    "autotuning": ("device_tuning",),
}

# stage -> the only languages it applies to (absent: every language).
LANGUAGES: Mapping[str, tuple[str, ...]] = {"block_pointers": ("triton",)}


class StageSelectionError(ValueError):
    """A --stages value that names no stage, or one that does not apply; the message is one line."""


@lru_cache(maxsize=1)
def must_follow() -> dict[str, frozenset[str]]:
    """Every stage's transitive predecessors, so a rule holds even through a stage that does not run."""
    closure: dict[str, frozenset[str]] = {}

    def before(stage: str) -> frozenset[str]:
        if stage not in closure:
            direct = HARD_DEPENDENCIES.get(stage, ())
            closure[stage] = frozenset(direct).union(*(before(d) for d in direct))
        return closure[stage]

    for stage in STAGES:
        before(stage)
    return closure


def enforce_order(proposed: Sequence[str], stages: Iterable[str]) -> list[str]:
    """`stages` in the proposed order as far as the hard dependencies allow (unnamed ones after, canonically)."""
    wanted = set(stages)
    preference = list(dict.fromkeys(s for s in proposed if s in wanted))
    preference += [s for s in STAGES if s in wanted and s not in preference]
    order: list[str] = []
    while preference:
        ready = next(s for s in preference if not (must_follow()[s] & set(preference)))
        order.append(ready)
        preference.remove(ready)
    return order


def select_stages(spec: str | None, language: str) -> tuple[str, ...]:
    """The stages a --stages value selects: "fusion,memory_access" picks, "-autotuning" skips, none: all.

    Stages that do not apply to the language are left out of the default; naming one is an error.
    """
    items = [item.strip() for item in (spec or "").split(",") if item.strip()]
    skip = {_known(item[1:]) for item in items if item.startswith("-")}
    pick = [_known(item) for item in items if not item.startswith("-")]
    for stage in pick:
        if language not in LANGUAGES.get(stage, (language,)):
            raise StageSelectionError(f"stage {stage} applies to {', '.join(LANGUAGES[stage])} only, "
                                      f"not {language}")
    chosen = set(pick) if pick else {s for s in STAGES if language in LANGUAGES.get(s, (language,))}
    return tuple(s for s in STAGES if s in chosen and s not in skip)


def _known(name: str) -> str:
    stage = stage_of(name)
    if stage is None:
        raise StageSelectionError(f"unknown stage {name!r}; choose from {', '.join(STAGES)} (prefix - to skip)")
    return stage


def parse_order(reply: str, stages: Sequence[str]) -> tuple[list[str], list[str]]:
    """The stage names in a planner reply, in order, and notes on names that are not among `stages`."""
    data = find_json(reply)
    if isinstance(data, dict):
        data = data.get("order") or data.get("stages") or []
    names = [str(n) for n in data] if isinstance(data, list) else _names_in_lines(reply)
    order: list[str] = []
    notes: list[str] = []
    for name in names:
        stage = stage_of(name)
        if stage is not None and stage in stages:
            order.append(stage)
        else:
            notes.append(f"the planner named {name!r}, which is not a stage to order here")
    return order, notes


def _names_in_lines(reply: str) -> list[str]:
    names = []
    for line in reply.splitlines():
        words = line.strip().lstrip("-*0123456789.) ").split(":")[0].strip().strip("*`")
        if stage_of(words):
            names.append(words)
    return names


@dataclass(frozen=True)
class Plan:
    order: tuple[str, ...]  # what will run, dependencies enforced
    proposed: tuple[str, ...] = ()  # what the model proposed
    notes: tuple[str, ...] = ()
    completion: Completion | None = None

    def without_first(self) -> Plan:
        return Plan(self.order[1:], self.proposed, self.notes, self.completion)


class PlannerAgent:
    def __init__(self, chat: ChatModel, target: Target, max_tokens: int = 512,
                 temperature: float | None = None) -> None:
        self.chat = chat
        self.target = target
        self.max_tokens = max_tokens
        self.temperature = temperature

    def messages(self, analysis: Analysis, stages: Sequence[str]) -> list[Message]:
        groups = [(s, STAGE_TITLES[s], analysis.for_stage(s)) for s in stages]
        rules = [(s, [b for b in stages if b in must_follow()[s]]) for s in stages if must_follow()[s] & set(stages)]
        user = render("planner", groups=groups, rules=rules, stages=list(stages))
        system = render("planner_system", language_name=self.target.language_name,
                        platform_name=self.target.platform_name)
        return [Message.system(system), Message.user(user)]

    def plan(self, analysis: Analysis) -> Plan:
        """An order for the stages the analysis found issues for."""
        stages = [s for s in STAGES if s in analysis.stages]
        if len(stages) <= 1:
            return Plan(tuple(stages), tuple(stages))
        completion = self.chat.complete(self.messages(analysis, stages), max_tokens=self.max_tokens,
                                        temperature=self.temperature)
        proposed, notes = parse_order(completion.text, stages)
        order = enforce_order(proposed, stages)
        proposed = list(dict.fromkeys(proposed))
        if order[:len(proposed)] != proposed:
            notes.append(f"hard dependencies changed the proposed order {' > '.join(proposed)} "
                         f"to {' > '.join(order)}")
        return Plan(tuple(order), tuple(proposed), tuple(notes), completion)
