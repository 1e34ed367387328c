"""What a pipeline says while it works, as typed events: a passing status ('evaluating attempt 4'), or a
lasting line of a given kind (an attempt judged, a round's recommendation, a stage's result, the plan) that a
log keeps. Whoever runs a pipeline decides how to show them; nothing reads their text for meaning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

# status: a passing step ('evaluating attempt 4'); stream: a model's reply growing ('model writing: 1200
# characters'); the others are lasting lines, by what they report.
EventKind = Literal["status", "stream", "attempt", "round", "stage", "analysis", "plan"]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    text: str

    @property
    def lasting(self) -> bool:
        """Worth a line of its own in a log, not only a passing status."""
        return self.kind not in ("status", "stream")

    def __str__(self) -> str:
        return self.text


EventSink = Callable[[Event], None]


def gist(text: str, limit: int = 100) -> str:
    """`text` as one line of at most `limit` characters, cut at a word with an ellipsis: a model's reply in a
    progress line (the whole reply goes to the model and the store)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


class Reporter:
    """A pipeline's voice: `say(text)` for a passing status, `say.line(kind, text)` for a lasting line. Also usable
    where a plain `Callable[[str], None]` progress callback is expected (the engine's tuner)."""

    def __init__(self, sink: EventSink | None = None) -> None:
        self.sink = sink

    def __call__(self, text: str) -> None:
        self.line("status", text)

    def line(self, kind: EventKind, text: str) -> None:
        if self.sink is not None:
            self.sink(Event(kind, text))
