"""What a static check reports: a Finding from one validator, a Violation once tied to its constraint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Violation:
    constraint_id: str
    severity: Literal["error", "warning"]
    message: str
    #: line in the candidate's Python file (strings holding C++/CUDA/Metal count from where they start)
    line: int | None


@dataclass(frozen=True)
class Finding:
    """One problem a validator saw; `severity` overrides the constraint's own where a rule has two levels."""

    message: str
    line: int | None = None
    severity: Literal["error", "warning"] | None = None
