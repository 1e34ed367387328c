"""What a kernel engineer wants to read after a failed attempt, written for the model to act on."""

from __future__ import annotations

from enum import Enum

from kforge.verify.policy import rule_help
from kforge.verify.verdict import Outcome, Verdict


class AttemptOutcome(str, Enum):
    """How an attempt ended, as the loop classifies it."""

    GENERATION_FAILURE = "generation_failure"
    BUILD_FAILURE = "build_failure"
    RUNTIME_ERROR = "runtime_error"
    MISMATCH = "mismatch"
    REJECTED = "rejected"
    CORRECT = "correct"

    @classmethod
    def of(cls, verdict: Verdict) -> AttemptOutcome:
        return {
            Outcome.CORRECT.value: cls.CORRECT,
            Outcome.INCORRECT.value: cls.MISMATCH,
            Outcome.COMPILE_ERROR.value: cls.BUILD_FAILURE,
            Outcome.REJECTED.value: cls.REJECTED,
        }.get(str(verdict.verdict), cls.RUNTIME_ERROR)


_MAX_FEEDBACK_LINES = 40


def verdict_feedback(verdict: Verdict) -> str:
    """The harness's verdict as feedback: what failed, the evidence, and what to do about it."""
    outcome = str(verdict.verdict)
    reason = _trim(verdict.reason)
    if outcome == Outcome.COMPILE_ERROR.value:
        return f"The code did not compile. Compiler errors:\n{reason}"
    if outcome == Outcome.RUNTIME_ERROR.value:
        return f"The code raised an error when run:\n{reason}"
    if outcome == Outcome.INCORRECT.value and verdict.rule:
        return f"The module does not compute what the reference does ({verdict.rule}): {reason}\n" \
               f"{rule_help(verdict.rule)}".rstrip()
    if outcome == Outcome.INCORRECT.value:
        error = f" (max abs error {verdict.max_abs_error:.3g})" if verdict.max_abs_error else ""
        return f"The output does not match the reference{error}:\n{reason}"
    if outcome == Outcome.REJECTED.value:
        help_text = rule_help(verdict.rule)
        return f"The harness rejected the code under rule {verdict.rule}: {reason}\n{help_text}".rstrip()
    if outcome == Outcome.TIMEOUT.value:
        return f"The code did not finish in time: {reason}"
    if outcome == Outcome.CRASHED.value:
        return f"The process running the code crashed: {reason}"
    return reason


def generation_feedback(problem: str) -> str:
    return f"Your reply could not be used: {problem}."


def _trim(text: str) -> str:
    lines = text.strip().splitlines()
    if len(lines) <= _MAX_FEEDBACK_LINES:
        return "\n".join(lines)
    return "\n".join([*lines[:_MAX_FEEDBACK_LINES], f"... ({len(lines) - _MAX_FEEDBACK_LINES} more lines)"])
