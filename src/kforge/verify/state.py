"""Module state after the forward: the reference's buffers that its calls change, against the candidate's.

A forward's outputs are not all it computes. A batch norm in training mode also moves `running_mean` and
`running_var` towards the batch's statistics and counts `num_batches_tracked`; a candidate that leaves them as
they were returns the same outputs and is still another function (its `.eval()` later normalizes with stale
statistics). So after each correctness request the harness compares the reference's buffers with the candidate's.

The rule (runs in the harness, never in the worker):

- Only the reference's buffers that its forward changed are required: those no longer bit-identical to their value
  when the model was built. Buffers that stay put (a causal mask, the running statistics of an `.eval()` layer)
  are the candidate's own business.
- A required buffer is matched by name: the candidate's buffer of the same qualified name (`norm.running_mean`), or
  else its only buffer whose name ends in `.` and that name (`reference.norm.running_mean`: the reference's layers
  held under one attribute, as generated modules hold them). None, or several, is a failure.
- The matched buffer must hold the same values, compared as outputs are (dtype, shape, tolerance by dtype; an
  integer count exactly), but for one allowance: in half precision the relative-norm bound is the dtype's
  elementwise rtol. A running statistic is rounded to its dtype on every update, and two correct updates (torch's,
  and an exact float32 one) round a batch's mean one unit in the last place apart now and then: 0.4% of the value in
  bfloat16, kept for some ten updates by a momentum of 0.1, past the outputs' 1% bound within a few calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kforge.verify.correctness import Tolerance, compare, tolerance_for
from kforge.verify.tensors import same_bits

STATE_RULE = "dynamic.state"
_HALF = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class StateMismatch:
    """Why the candidate's state differs from the reference's, in one line."""

    message: str


def snapshot(model: Any) -> dict[str, torch.Tensor]:
    """Detached copies of a (trusted) module's buffers, by qualified name; empty for anything else."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {name: buffer.detach().clone() for name, buffer in model.named_buffers()}


def restore(model: Any, saved: dict[str, torch.Tensor]) -> None:
    """Put a snapshot's values back into the same module's buffers (a call that must not count leaves none)."""
    if not saved:
        return
    buffers = dict(model.named_buffers())
    with torch.no_grad():
        for name, value in saved.items():
            if name in buffers and buffers[name].shape == value.shape:
                buffers[name].copy_(value)


def changed(initial: dict[str, torch.Tensor], now: dict[str, torch.Tensor]) -> list[str]:
    """The names of buffers whose value differs from `initial` (or that were not there), in `now`'s order."""
    return [name for name, value in now.items()
            if name not in initial or not same_bits(initial[name].cpu(), value.cpu())]


def buffer_tolerance(dtype: torch.dtype) -> Tolerance:
    """The tolerance a buffer of `dtype` is compared with: the outputs', with the half-precision allowance above."""
    base = tolerance_for(dtype)
    if dtype not in _HALF:
        return base
    return Tolerance(atol=base.atol, rtol=base.rtol, norm_tol=max(base.norm_tol, base.rtol))


def counterpart(name: str, candidate: dict[str, Any]) -> tuple[str | None, str]:
    """The candidate's buffer standing for the reference's buffer `name` (see the module's rule), and why there is
    none when there is not."""
    if name in candidate:
        return name, ""
    ending = "." + name
    found = sorted(key for key in candidate if key.endswith(ending))
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, f"the candidate keeps no buffer named {name} (nor one ending in {ending})"
    listed = ", ".join(found[:4]) + (" ..." if len(found) > 4 else "")
    return None, f"the candidate keeps several buffers ending in {ending} ({listed}), so none stands for it"


def compare_state(reference: dict[str, torch.Tensor], required: list[str], candidate: Any,
                  tolerance: Tolerance | None = None) -> StateMismatch | None:
    """The first required reference buffer the candidate does not match, or None; `candidate` is what the worker
    reported (untrusted: anything that is not a mapping of names to tensors matches nothing)."""
    held = {key: value for key, value in candidate.items() if isinstance(key, str)} \
        if isinstance(candidate, dict) else {}
    for name in required:
        match, why = counterpart(name, held)
        if match is None:
            return StateMismatch(f"the reference updates its buffer {name} during forward; {why}")
        expected = reference[name].cpu()
        comparison = compare(expected, held[match], tolerance or buffer_tolerance(expected.dtype),
                             where=f"buffer {match}")
        if not comparison.ok:
            return StateMismatch(f"the reference updates its buffer {name} during forward, and the candidate's "
                                 f"differs after the same calls: {comparison.reason}")
    return None
