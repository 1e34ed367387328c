"""Reading a target's entries from `data/knowledge/<platform>/{common,<language>}/*.yaml`, validated.

A bad file stops loading with one line naming the file and the entry, so a typo in the data is found
when the base is first used rather than when a prompt comes out wrong.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from kforge.knowledge.base import KnowledgeBase
from kforge.knowledge.entries import Constraint, Pattern, WorkedExample
from kforge.knowledge.validators import VALIDATORS

_KINDS: dict[str, type[BaseModel]] = {
    "constraints.yaml": Constraint,
    "patterns.yaml": Pattern,
    "examples.yaml": WorkedExample,
}
_SHARED = "common"


class KnowledgeFileError(ValueError):
    """A knowledge data file is malformed; the message names the file and the entry."""


def load_knowledge(platform: str, language: str) -> KnowledgeBase:
    """The knowledge base for a target; an unknown target gives an empty base. Files are read once."""
    constraints, patterns, examples = _load(platform, language)
    return KnowledgeBase(platform, language, list(constraints), list(patterns), list(examples))


def knowledge_root() -> Traversable:
    return resources.files("kforge").joinpath("data/knowledge")


def targets() -> list[tuple[str, str]]:
    """Every (platform, language) that has a folder of entries."""
    found = []
    for platform in sorted(knowledge_root().iterdir(), key=lambda p: p.name):
        if not platform.is_dir() or platform.name == "templates":
            continue
        found += [(platform.name, language.name) for language in sorted(platform.iterdir(), key=lambda p: p.name)
                  if language.is_dir() and language.name != _SHARED]
    return found


@cache
def _load(platform: str, language: str) -> tuple[tuple[Constraint, ...], tuple[Pattern, ...],
                                                 tuple[WorkedExample, ...]]:
    folder = knowledge_root().joinpath(platform, language)
    if language == _SHARED or not folder.is_dir():
        return (), (), ()
    entries: dict[str, list[Any]] = {name: [] for name in _KINDS}
    seen: dict[str, str] = {}
    for sub in (_SHARED, language):
        for name, model in _KINDS.items():
            path = knowledge_root().joinpath(platform, sub, name)
            if path.is_file():
                label = f"{platform}/{sub}/{name}"
                for entry in _read(path, label, model):
                    if entry.id in seen:
                        raise KnowledgeFileError(f"{label}: entry {entry.id!r} repeats an id from {seen[entry.id]}")
                    seen[entry.id] = label
                    entries[name].append(entry)
    return (tuple(entries["constraints.yaml"]), tuple(entries["patterns.yaml"]), tuple(entries["examples.yaml"]))


def _read(path: Traversable, label: str, model: type[BaseModel]) -> list[Any]:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KnowledgeFileError(f"{label}: not valid YAML{where}") from None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise KnowledgeFileError(f"{label}: expected a list of entries at the top level")
    parsed = []
    for index, item in enumerate(raw, start=1):
        name = item.get("id", "?") if isinstance(item, dict) else "?"
        try:
            entry = model.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "entry"
            raise KnowledgeFileError(f"{label}: entry {index} ({name!r}): {field}: {first['msg']}") from None
        validator = getattr(entry, "validator", None)
        if validator is not None and validator not in VALIDATORS:
            raise KnowledgeFileError(f"{label}: entry {index} ({name!r}): unknown validator {validator!r}; "
                                     f"known: {', '.join(sorted(VALIDATORS))}")
        parsed.append(entry)
    return parsed
