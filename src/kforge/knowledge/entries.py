"""The three kinds of knowledge-base entry, as validated models of what the YAML data files hold."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kforge.knowledge.stages import STAGES

Feature = Literal["gemm", "reduction", "elementwise", "convolution", "attention"]
FEATURES: tuple[str, ...] = ("gemm", "reduction", "elementwise", "convolution", "attention")
Severity = Literal["error", "warning"]

_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID_PATTERN)
    #: problem features the entry is about; empty means it applies to every problem
    applies_to: tuple[Feature, ...] = ()
    #: the public document the entry is written from (a title, no URL needed)
    source: str = Field(min_length=3)

    def matches(self, features: frozenset[str]) -> bool:
        return not self.applies_to or bool(features.intersection(self.applies_to))


class Constraint(_Entry):
    """A rule a candidate must (error) or should (warning) obey on the target."""

    text: str = Field(min_length=10)
    severity: Severity
    #: the id of a function in `kforge.knowledge.validators` that checks the rule statically, if any
    validator: str | None = None


class Pattern(_Entry):
    """An optimization that one stage of the pipeline may apply."""

    stage: str
    title: str = Field(min_length=3)
    when: str = Field(min_length=10)
    before: str = Field(min_length=3)
    after: str = Field(min_length=3)
    rationale: str = Field(min_length=10)

    @field_validator("stage")
    @classmethod
    def _known_stage(cls, value: str) -> str:
        _require_stages((value,))
        return value


class WorkedExample(_Entry):
    """A short before/after sketch of one optimization carried out on a small problem."""

    title: str = Field(min_length=3)
    #: the stages the example illustrates; empty means any stage
    stages: tuple[str, ...] = ()
    problem: str = Field(min_length=10)
    before: str = Field(min_length=3)
    after: str = Field(min_length=3)
    takeaway: str = Field(min_length=10)

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        _require_stages(value)
        return value

    def shows(self, stage: str) -> bool:
        return not self.stages or stage in self.stages


def _require_stages(stages: tuple[str, ...]) -> None:
    unknown = [stage for stage in stages if stage not in STAGES]
    if unknown:
        raise ValueError(f"unknown stage {', '.join(unknown)}; choose from {', '.join(STAGES)}")
