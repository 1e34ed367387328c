"""Reading the analyzer's and the planner's replies: JSON where the model gave it, stage names however spelled.

Models asked for JSON answer with a fenced ```json block, a bare object, JSON inside prose, or a plain
list of lines. `find_json` returns the first JSON value it can read, or None so the caller can fall back to
lines; `stage_of` maps "Operator fusion", "memory-access" or "block_pointers" to a stage's name.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kforge.agents.replies import code_blocks
from kforge.knowledge.stages import STAGE_TITLES, STAGES

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def _key(text: str) -> str:
    return _NOT_WORD.sub("_", text.lower()).strip("_")


_NAMES: dict[str, str] = {**{_key(title): stage for stage, title in STAGE_TITLES.items()},
                          **{_key(stage): stage for stage in STAGES}}


def stage_of(text: str) -> str | None:
    """The stage a name or title refers to, or None when it is not one of the stages."""
    return _NAMES.get(_key(text))


def find_json(reply: str) -> Any | None:
    """The first JSON value in a reply: a fenced block, the whole reply, or the outermost [...] or {...}."""
    texts = [block.code for block in code_blocks(reply)] + [reply]
    for text in texts:
        for candidate in (text, *_bracketed(text)):
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    return None


def _bracketed(text: str) -> list[str]:
    found = []
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = text.find(opening), text.rfind(closing)
        if 0 <= start < end:
            found.append(text[start:end + 1])
    return sorted(found, key=lambda piece: text.find(piece))
