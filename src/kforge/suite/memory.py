"""How much GPU memory one problem of a suite needs, estimated in the suite's own process before the problem is
dealt to a slot, without a GPU: the reference is built and called once on torch's `meta` device (tensors with
shapes and dtypes but no data, so nothing is allocated whatever the sizes), and the bytes it touches become the
figure slots sharing a GPU are admitted by (suite/admission.py).

One call of the reference gives four figures (`Footprint`): its parameters and buffers P, one input set In (the
largest of `get_inputs()` and its variants), one call's outputs Out, and T, the most bytes the call made that were
alive at once (its intermediates and outputs; what aliases an input or a parameter is not new). An evaluation
holds them in three processes on the GPU at once, and each process's allocator keeps its peak until it ends:

    the harness (task process)  P + 2 In + 2 Out + T     the reference; a trial's inputs and the clone it keeps;
                                                          the outputs of the trial's two calls
    the candidate's worker      P + (rotate + 1) In      the timing protocol's rotating input sets and the set
                                + 2 Out + T + staging     drawn fresh for each call; the two outputs kept for spot
                                                          checks; the outside clock's staged batches
    the reference's worker      2 P + (rotate + 1) In    the eager and torch.compile baselines are two models
                                + 2 Out + T

    staging = max(1 GiB, 2 (In + Out))     outside_clock.plan_batches: at most 1 GiB, never fewer than two calls

The engine's variant search (verify/search.py) tries one variant at a time in a worker of its own beside the
harness, and retires it before any judgment starts: it holds what a candidate's worker does, without staging, so
the evaluation's figure covers it. Not counted: each process's device context (about 0.5 GB on CUDA), Triton's
autotuning buffers, torch.compile's workspaces, a kernel's own scratch memory, and the allocator's rounding. The
admission's safety factor is there for those. On the meta device some operators take a path that materializes
more than their GPU kernels do (scaled_dot_product_attention its scores, for one): that errs on the side of more.

The meta device rather than FakeTensorMode: a model that converts itself in its constructor (`self.half()`) cannot
be built under FakeTensorMode (torch 2.13: "Couldn't swap Linear.weight"; 2 of the 68 engine-suite problems), and
FakeTensorMode's fallback for an operator without a meta kernel runs it on real tensors of the full size.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from kforge.verify.outside_clock import MAX_STAGED_BYTES
from kforge.verify.timing import TimingBudget

GB = 10**9  # what the messages say a GB is


@dataclass(frozen=True)
class Footprint:
    """One call of the reference, in bytes."""

    parameters: int  # parameters and buffers, each counted once
    inputs: int  # one input set: the largest of get_inputs() and its variants
    outputs: int  # what one call returns
    transient: int  # the most bytes the call made that were alive at once, its outputs included


@dataclass(frozen=True)
class Estimate:
    """What a problem needs on its GPU; `bytes` None when it could not be estimated (`reason` says why): such a
    problem is given a GPU of its own."""

    bytes: int | None
    reason: str = ""


def needed_bytes(footprint: Footprint, rotate: int = TimingBudget().rotate) -> int:
    """The GPU memory an evaluation of the problem holds at its peak, over all its processes (the module's
    docstring gives the formula and what it leaves out)."""
    p, inputs, outputs, transient = footprint.parameters, footprint.inputs, footprint.outputs, footprint.transient
    staging = max(MAX_STAGED_BYTES, 2 * (inputs + outputs))
    harness = p + 2 * inputs + 2 * outputs + transient
    candidate = p + (rotate + 1) * inputs + 2 * outputs + transient + staging
    reference = 2 * p + (rotate + 1) * inputs + 2 * outputs + transient
    return harness + candidate + reference


def estimate(path: Path) -> Estimate:
    """The memory the problem at `path` needs: its reference traced on the meta device. Any failure (a file that
    does not load, an operator without a meta kernel, a value that depends on data) becomes the reason."""
    from kforge.problem import ProblemError, load_problem

    try:
        problem = load_problem(path, check_runs=False)
    except ProblemError as exc:
        return Estimate(None, str(exc))
    try:
        return Estimate(needed_bytes(footprint(problem.make_model, problem.input_sets)))
    except (Exception, SystemExit) as exc:  # the user's code on tensors without data: anything may go wrong
        return Estimate(None, f"its reference could not be traced: {type(exc).__name__}: {exc}".splitlines()[0])
    finally:
        sys.modules.pop(problem.module.__name__, None)  # its tensors and classes go when the estimate is done


def footprint(make_model: Callable[[int], torch.nn.Module], input_sets: Callable[[int], list[list[Any]]],
              seed: int = 0) -> Footprint:
    """The reference built by `make_model(seed)` called once on each of `input_sets(seed)`, all on the meta device
    (nothing is allocated, whatever the sizes)."""
    meta = torch.device("meta")
    with meta:  # torch's factories make meta tensors; what a problem makes otherwise (from NumPy) is moved there
        model = make_model(seed).to(meta)
        sets = [tree_map(lambda value: _to(value, meta), inputs) for inputs in input_sets(seed)]
        held = [*model.parameters(), *model.buffers()]
        calls = []
        for inputs in sets:
            with torch.no_grad(), LiveBytes(outside=[*held, *_tensors(inputs)]) as live:
                outputs = model(*inputs)
            calls.append((_bytes(_tensors(inputs)), _bytes(_tensors(outputs)), live.peak))
            del outputs
    return Footprint(parameters=_bytes(held), inputs=max(call[0] for call in calls),
                     outputs=max(call[1] for call in calls), transient=max(call[2] for call in calls))


class LiveBytes(TorchDispatchMode):
    """While active, the bytes of the storages that operators create and that are still alive, and their peak.
    Storages of `outside` (parameters, inputs) are not new: a view of one or an in-place write to one adds
    nothing. A storage counts from the operator that made it until its last tensor is gone."""

    def __init__(self, outside: Iterable[torch.Tensor]) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._outside = {id(tensor.untyped_storage()) for tensor in outside}
        self._counted: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        for tensor in _tensors(result):
            storage = tensor.untyped_storage()
            key = id(storage)  # torch keeps one Python object per storage while it lives, views included
            if key in self._outside or key in self._counted:
                continue
            size = storage.nbytes()
            self._counted.add(key)
            self.live += size
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._freed, key, size)
        return result

    def _freed(self, key: int, size: int) -> None:
        self._counted.discard(key)
        self.live -= size


def _to(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def _tensors(values: Any) -> Iterator[torch.Tensor]:
    return (leaf for leaf in tree_leaves(values) if isinstance(leaf, torch.Tensor))


def _bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of each distinct tensor (the same tensor passed twice counts once), as a copy of it would take."""
    distinct = {id(tensor): tensor for tensor in tensors}
    return sum(tensor.numel() * tensor.element_size() for tensor in distinct.values())
