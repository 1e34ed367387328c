"""Module state after the forward (verify/state.py): a candidate must update the buffers the reference's forward
updates, under the reference's names, to the same values.

The rule is shown on plain modules first, then through the whole harness: a training-mode batch norm whose
candidate ignores the running statistics is incorrect under `dynamic.state`, with or without the buffers; one that
updates them passes, held under another attribute or written by its own Triton kernel under the default policy.
"""

from __future__ import annotations

import pytest
import torch

from kforge.verify import state
from kforge.verify.correctness import compare, tolerance_for
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options

PROBLEM = PROBLEMS / "batch_norm_train.py"
FOLDER = CANDIDATES / "batch_norm_train"


def _trained(norm: torch.nn.Module, calls: int) -> dict[str, torch.Tensor]:
    built = state.snapshot(norm)
    with torch.no_grad():
        for _ in range(calls):
            norm(torch.randn(4, 3, 5) * 2 + 1)
    return built


def test_only_the_buffers_a_forward_changes_are_required() -> None:
    norm = torch.nn.BatchNorm1d(3)
    norm.register_buffer("mask", torch.ones(3))
    built = _trained(norm, calls=2)
    assert state.changed(built, state.snapshot(norm)) == ["running_mean", "running_var", "num_batches_tracked"]
    norm.eval()
    evaluated = _trained(norm, calls=1)
    assert state.changed(evaluated, state.snapshot(norm)) == []


def test_a_buffer_is_matched_by_its_name_or_the_one_name_ending_in_it() -> None:
    assert state.counterpart("norm.running_mean", {"norm.running_mean": 0, "x.norm.running_mean": 1})[0] == \
        "norm.running_mean"
    assert state.counterpart("norm.running_mean", {"reference.norm.running_mean": 0})[0] == \
        "reference.norm.running_mean"
    missing, why = state.counterpart("norm.running_mean", {"running_mean": 0, "mynorm.running_mean": 1})
    assert missing is None and "keeps no buffer named norm.running_mean" in why
    several, why = state.counterpart("norm.running_mean", {"a.norm.running_mean": 0, "b.norm.running_mean": 1})
    assert several is None and "several buffers ending in .norm.running_mean" in why


def test_stale_running_statistics_differ_and_updated_ones_match() -> None:
    torch.manual_seed(0)
    reference = torch.nn.BatchNorm1d(3)
    built = _trained(reference, calls=2)
    now = state.snapshot(reference)
    required = state.changed(built, now)
    stale = state.compare_state(now, required, built)
    assert stale is not None and "buffer running_mean" in stale.message and "out of tolerance" in stale.message
    assert state.compare_state(now, required, {name: value.clone() for name, value in now.items()}) is None
    counted_once = {**now, "num_batches_tracked": torch.tensor(1)}
    assert "num_batches_tracked" in str(state.compare_state(now, required, counted_once))
    assert state.compare_state(now, required, ["not", "a", "mapping"]) is not None


def test_half_precision_buffers_may_drift_by_their_rounding_but_not_stay_put() -> None:
    reference = torch.linspace(0.5, 1.0, 64, dtype=torch.bfloat16)
    ulp_apart = reference.float().add(3 * 2 ** -8).to(torch.bfloat16)  # three units in the last place: 1.5%
    assert not compare(reference, ulp_apart).ok  # as an output: past the relative-norm bound
    assert state.compare_state({"r": reference}, ["r"], {"r": ulp_apart}) is None
    assert state.compare_state({"r": reference}, ["r"], {"r": torch.zeros_like(reference)}) is not None
    assert state.buffer_tolerance(torch.float32) == tolerance_for(torch.float32)


def test_restore_puts_a_snapshot_back() -> None:
    norm = torch.nn.BatchNorm1d(3)
    built = _trained(norm, calls=1)
    state.restore(norm, built)
    assert state.changed(built, state.snapshot(norm)) == []


@pytest.mark.parametrize(("candidate", "reason"), [
    ("stale_statistics", "the candidate's differs after the same calls: buffer norm.running_mean"),
    ("no_state", "the candidate keeps no buffer named norm.running_mean"),
])
def test_a_candidate_ignoring_the_running_statistics_is_incorrect(candidate: str, reason: str) -> None:
    verdict = evaluate(PROBLEM, FOLDER / f"{candidate}.py", fast_options(policy=POLICY_OFF))
    assert verdict.verdict == Outcome.INCORRECT and verdict.rule == state.STATE_RULE, verdict.reason
    assert verdict.reason.startswith("trial 1/2: the reference updates its buffer norm.running_mean during forward")
    assert reason in verdict.reason


def test_a_candidate_updating_the_running_statistics_under_another_holder_passes() -> None:
    verdict = evaluate(PROBLEM, FOLDER / "held_updates.py", fast_options(policy=POLICY_OFF, measure=False))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason


def test_an_honest_triton_candidate_updating_them_in_its_kernel_passes_the_default_policy() -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    verdict = evaluate(PROBLEM, FOLDER / "triton_honest.py", fast_options(policy=Policy()))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
