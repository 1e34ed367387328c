"""The staged pipeline's trial tree, for `kforge show`: each kernel, the stages tried on it, their attempts.

A stage's share of the final speedup is its share of the log-speedup: log(input / output) of the stage over
log(start / final), runtimes being medians. Accepted stages chain (each one's output is the next one's
input), so the shares of a run add up to 1; a skipped stage's share is 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from rich.tree import Tree

from kforge.store import Attempt, Evaluation, StageStep, Store


@dataclass(frozen=True)
class StageGain:
    step: StageStep
    input_ms: float | None
    output_ms: float | None  # the accepted kernel's runtime; None when the stage was skipped
    share: float | None  # of the final log-speedup; None when there is no speedup to share


def speedup_shares(gains: Sequence[tuple[float, float] | None]) -> list[float | None]:
    """Each stage's share of the log-speedup, from (input ms, output ms) of accepted stages (None: skipped)."""
    accepted = [g for g in gains if g is not None]
    if not accepted:
        return [None] * len(gains)
    total = math.log(accepted[0][0] / accepted[-1][1])
    if total <= 0:
        return [None] * len(gains)
    return [math.log(g[0] / g[1]) / total if g is not None else 0.0 for g in gains]


def stage_gains(store: Store, run_id: int) -> list[StageGain]:
    steps = store.stages_of(run_id)

    def runtime(attempt_id: int | None) -> float | None:
        evaluation = store.evaluation_of(attempt_id) if attempt_id is not None else None
        return evaluation.runtime_ms if evaluation else None

    pairs = [(runtime(s.input_attempt_id), runtime(s.output_attempt_id)) for s in steps]
    timed = [(i, o) if i is not None and o is not None and s.status == "accepted" else None
             for s, (i, o) in zip(steps, pairs, strict=True)]
    shares = speedup_shares(timed)
    return [StageGain(s, i, o if s.status == "accepted" else None, share)
            for s, (i, o), share in zip(steps, pairs, shares, strict=True)]


def trial_tree(store: Store, run_id: int) -> Tree | None:
    """The tree of a staged run, or None for a run that ran no stage."""
    gains = stage_gains(store, run_id)
    if not gains:
        return None
    attempts = store.attempts_of(run_id)
    evaluations = {a.id: store.evaluation_of(a.id) for a in attempts}
    start = gains[0].step.input_attempt_id
    accepted = [g for g in gains if g.output_ms is not None]
    final = accepted[-1].step.output_attempt_id if accepted else start
    start_ms, final_ms = gains[0].input_ms, accepted[-1].output_ms if accepted else gains[0].input_ms
    overall = f", {start_ms / final_ms:.2f}x" if start_ms and final_ms else ""
    numbers = {a.id: a.number for a in attempts}  # stages name attempts by id; people by number in the run
    root = Tree(Text(f"run {run_id}: start attempt {_number(numbers, start)} ({_ms(start_ms)}) -> final attempt "
                     f"{_number(numbers, final)} ({_ms(final_ms)}){overall}"))
    first_pass = [a for a in attempts if a.stage is None and a.id != start]
    if first_pass:
        functional = root.add(Text("functional pass (KForge loop)"))
        for attempt in first_pass:
            functional.add(Text(_attempt_label(attempt, evaluations[attempt.id])))
    by_input: dict[int | None, list[StageGain]] = defaultdict(list)
    for gain in gains:
        by_input[gain.step.input_attempt_id].append(gain)
    by_stage: dict[tuple[str | None, int | None], list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        by_stage[(attempt.stage, attempt.parent_attempt_id)].append(attempt)

    def grow(node: Tree, kernel_id: int | None) -> None:
        for gain in by_input.get(kernel_id, []):
            if gain.step.position == 0 or gain.step.detail.get("plan") != _previous_rest(gains, gain):
                node.add(Text(f"plan: {' > '.join(gain.step.detail.get('plan', [])) or '-'}"))
            stage_node = node.add(Text(_stage_label(gain)))
            for attempt in by_stage.get((gain.step.stage, kernel_id), []):
                child = stage_node.add(Text(_attempt_label(attempt, evaluations[attempt.id],
                                                           accepted=attempt.id == gain.step.output_attempt_id)))
                if attempt.id == gain.step.output_attempt_id:
                    grow(child, attempt.id)

    start_attempt = next((a for a in attempts if a.id == start), None)
    kernel = root.add(Text(f"start: {_attempt_label(start_attempt, evaluations.get(start_attempt.id))}" if start_attempt
                           else f"start: attempt {_number(numbers, start)}"))
    grow(kernel, start)
    return root


def _previous_rest(gains: list[StageGain], gain: StageGain) -> list[str] | None:
    previous = gains[gain.step.position - 1].step.detail.get("plan", [])
    return list(previous[1:])


def _stage_label(gain: StageGain) -> str:
    step = gain.step
    share = "-" if gain.share is None else f"{gain.share:.0%}"
    if step.status == "accepted":
        change = f"{_ms(gain.input_ms)} -> {_ms(gain.output_ms)}"
    else:
        change = f"skipped after {step.detail.get('tries', '?')} tries"
    issues = len(step.detail.get("issues", []))
    return f"stage {step.position + 1}: {step.stage} ({issues} issue(s)): {change}; share of speedup {share}"


def _attempt_label(attempt: Attempt, evaluation: Evaluation | None, accepted: bool = False) -> str:
    outcome = evaluation.outcome if evaluation else "(not evaluated)"
    runtime = f" {_ms(evaluation.runtime_ms)}" if evaluation and evaluation.runtime_ms is not None else ""
    broken = ""
    if evaluation and evaluation.verdict.get("violations"):
        broken = " [" + ", ".join(v["constraint_id"] for v in evaluation.verdict["violations"]
                                  if v.get("severity") == "error") + "]"
    tried = f" try {attempt.round}" if attempt.stage else ""
    kept = " accepted" if accepted else ""
    return f"attempt {attempt.number}{tried} ({attempt.made_by}): {outcome}{runtime}{broken}{kept}"


def _number(numbers: dict[int, int], attempt_id: int | None) -> str:
    """How a person names the attempt with this id: its number within the run ('-' for none)."""
    number = numbers.get(attempt_id) if attempt_id is not None else None
    return "-" if number is None else str(number)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"
