"""Tensors a forward makes from sizes alone, folded at capture, and the triangular masks among them.

Attention code builds its mask in `forward`: `torch.tril(torch.ones(t, t, device=x.device))`, a `triu` of
it, `== 0`, `.bool()`, `.view(1, 1, t, t)`. None of that reads an input's values, and the sizes it reads are
static (the same on every input set), so capture computes such values in torch as a `Constant` instead of
lowering them. Where a constant meets a real value (`masked_fill`, `torch.where`, `+ mask`, an attention's
mask), the only constants the IR can hold are triangles: `Triangle` names the `tril`/`triu` op whose kept
part is the constant's, and the consumer becomes that mask op with a fill (`-inf` for attention, 0 for a
product). Any other constant is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

# Factories of a tensor from sizes (and a fill value) alone.
FACTORIES: tuple[Callable[..., Any], ...] = (torch.ones, torch.zeros, torch.full)


@dataclass(frozen=True)
class Constant:
    """A tensor computed at capture from sizes and numbers only."""

    tensor: torch.Tensor


@dataclass(frozen=True)
class Triangle:
    """The kept part of a mask over the last two dims: `torch.<op>(ones, diagonal)`."""

    op: str
    diagonal: int

    @property
    def causal(self) -> bool:
        """Key j kept for query i when j <= i: scaled_dot_product_attention's `is_causal`."""
        return self.op == "tril" and self.diagonal == 0


def run(target: Any, method: bool, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """One fx call on concrete values (a method's object first): its result, a tensor as a `Constant`."""
    kwargs = {key: value for key, value in kwargs.items() if key != "device"}  # folded on the CPU
    result = getattr(args[0], target)(*args[1:], **kwargs) if method else target(*args, **kwargs)
    return Constant(result) if isinstance(result, torch.Tensor) else result


def plane(tensor: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor | None:
    """The (rows, cols) plane of `tensor` broadcast to `shape` over its last two dims: None where it does not
    broadcast, or differs along a leading dim, or its plane is not `shape`'s last two dims."""
    if tensor.dim() < 2 or len(shape) < 2 or tuple(tensor.shape[-2:]) != tuple(shape[-2:]):
        return None
    try:
        torch.broadcast_shapes(tuple(tensor.shape), shape)
    except RuntimeError:
        return None
    if torch.broadcast_shapes(tuple(tensor.shape), shape) != torch.Size(shape):
        return None
    planes = tensor.reshape(-1, *tensor.shape[-2:])
    return planes[0] if all(torch.equal(planes[0], other) for other in planes[1:]) else None


def triangle(keep: torch.Tensor) -> Triangle | None:
    """The `tril`/`triu` whose kept part is `keep` (a boolean plane), or None. A plane kept or dropped in
    full is no triangle (its consumer is not a mask)."""
    rows, cols = keep.shape
    counts = [int(count) for count in keep.sum(1)]
    partial = [row for row, count in enumerate(counts) if 0 < count < cols]
    if not partial:
        return None
    row, count = partial[0], counts[partial[0]]
    ones = torch.ones(rows, cols, dtype=torch.bool)
    for op, diagonal in (("tril", count - 1 - row), ("triu", cols - count - row)):
        if torch.equal(getattr(torch, op)(ones, diagonal), keep):
            return Triangle(op, diagonal)
    return None


def uniform(tensor: torch.Tensor) -> float | None:
    """The one value every element holds, or None."""
    flat = tensor.flatten()
    if flat.numel() == 0 or not bool((flat == flat[0]).all()):
        return None
    return float(flat[0])


def additive(tensor: torch.Tensor, shape: tuple[int, ...], dropped: float) -> Triangle | None:
    """The triangle of a mask added (`dropped` = -inf) or multiplied (`dropped` = 0) in: kept where it holds the
    operation's identity, `dropped` elsewhere."""
    values = plane(tensor, shape)
    if values is None or values.dtype == torch.bool:
        return None
    keep = values == (0.0 if dropped == float("-inf") else 1.0)
    if not bool((values[~keep] == dropped).all()):
        return None
    return triangle(keep)
