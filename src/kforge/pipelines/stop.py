"""Why a run ended, as code reads it: the kind decides whether it can go on; `stop_reason` says it in words."""

from __future__ import annotations

from enum import Enum

from kforge.llm.budget import BudgetExceeded


class StopKind(str, Enum):
    FINISHED = "finished"  # it did what it set out to do, or found it could do no more (no correct kernel, ...)
    LLM_BUDGET = "llm_budget"  # calls, tokens or dollars ran out: a resume needs a larger budget (spend counts)
    TIME_BUDGET = "time_budget"  # the wall-clock budget ran out: a resume starts it afresh
    MODEL_FAILED = "model_failed"  # the model failed for good (retries spent): a resume asks it again

    @classmethod
    def of_budget(cls, exc: BudgetExceeded) -> StopKind:
        return cls.TIME_BUDGET if exc.limit == "max_wall_s" else cls.LLM_BUDGET

    @property
    def can_go_on(self) -> bool:
        """Whether resuming the run could get further than it got."""
        return self is not StopKind.FINISHED
