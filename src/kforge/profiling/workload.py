"""What one forward call of the reference must do: its FLOPs and the least traffic it needs.

Counted on the REFERENCE model (the user's own code, run in the harness), so a candidate cannot shrink its
own figures: the roofline compares every candidate against the same work.

FLOPs come from `torch.utils.flop_counter.FlopCounterMode`, which counts matmuls, convolutions and
attention. A problem made only of elementwise ops and reductions counts zero there, which would leave no
roofline at all, so for those the count falls back to one op per output element of each pointwise ATen op
and one per input element of each reduction or normalization; `flops_method` says which count was used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from kforge.profiling.schema import Workload

# Ops that reduce or normalize but carry no `reduction` tag; each reads its input once.
_NORMALIZATIONS = frozenset({
    "aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm", "aten::native_group_norm",
    "aten::native_batch_norm", "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training",
    "aten::_safe_softmax",
})


class ElementwiseCounter(TorchDispatchMode):
    """Counts one op per output element of pointwise ATen ops, one per input element of reductions."""

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0
        self.by_op: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        tags = getattr(func, "tags", ())
        if torch.Tag.pointwise in tags:
            count = _numel(result)
        elif torch.Tag.reduction in tags or func._schema.name in _NORMALIZATIONS:
            first = next(iter(_tensors(args)), None)
            count = 0 if first is None else first.numel()
        else:
            count = 0
        if count:
            self.flops += count
            self.by_op[func._schema.name] += count
        return result


def measure_workload(model: torch.nn.Module, inputs: list[Any]) -> Workload:
    """Run `model(*inputs)` once and count its FLOPs and minimum bytes."""
    with torch.no_grad():
        flop_counter = FlopCounterMode(display=False)
        elementwise = ElementwiseCounter()
        with flop_counter, elementwise:
            outputs = model(*inputs)
    counted = flop_counter.get_total_flops()
    reads = [*_tensors(inputs), *model.parameters(), *model.buffers()]
    return Workload(flops=float(counted or elementwise.flops),
                    flops_method="flop_counter" if counted else "elementwise",
                    min_bytes=min_bytes(reads, outputs), dtype=_main_dtype([*reads, *_tensors(outputs)]))


def min_bytes(reads: Any, writes: Any) -> int:
    """Bytes of every distinct tensor in `reads` read once plus every distinct tensor in `writes` written once.

    A tensor passed twice (shared weights, the same input twice) counts once on each side; an output that
    aliases an input still counts on both, since it is read and then written.
    """
    return _distinct_bytes(reads) + _distinct_bytes(writes)


def _distinct_bytes(values: Any) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0
    for tensor in _tensors(values):
        key = (tensor.data_ptr(), tensor.numel())
        if key not in seen:
            seen.add(key)
            total += tensor.numel() * tensor.element_size()
    return total


def _tensors(values: Any) -> Iterator[torch.Tensor]:
    return (leaf for leaf in tree_leaves(values) if isinstance(leaf, torch.Tensor))


def _numel(values: Any) -> int:
    return sum(tensor.numel() for tensor in _tensors(values))


def _main_dtype(tensors: list[torch.Tensor]) -> str:
    """The floating dtype with the most bytes; float32 when there is no floating tensor at all."""
    sizes: Counter[torch.dtype] = Counter()
    for tensor in tensors:
        if tensor.is_floating_point():
            sizes[tensor.dtype] += tensor.numel() * tensor.element_size()
    dtype = sizes.most_common(1)[0][0] if sizes else torch.float32
    return str(dtype).removeprefix("torch.")
