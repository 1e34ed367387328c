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

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F

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


# ---- which tensors made in forward are masks ------------------------------------------------------------------
# A factory is folded only where everything made from it ends as a mask (a condition of `where`, the mask of
# `masked_fill`, an attention's `attn_mask`, or a mask added or multiplied into a value); any other use (a
# tensor returned, reduced, broadcast into a value) is left to capture's other lowerings.

_COMPARISONS = (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge, torch.eq, torch.ne,
                torch.lt, torch.le, torch.gt, torch.ge)
_PASSING_FUNCTIONS = (torch.tril, torch.triu, operator.getitem, operator.invert, torch.logical_not, operator.and_,
                      operator.or_, torch.logical_and, torch.logical_or, operator.sub, torch.sub, operator.truediv,
                      *_COMPARISONS)
_PASSING_METHODS = ("tril", "triu", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or",
                    "bool", "float", "to", "view", "reshape", "unsqueeze", "squeeze", "expand", "contiguous", "clone",
                    "detach", "sub", "div", "__and__", "__or__", "__invert__")
_COMBINING = (operator.add, operator.mul, torch.add, torch.mul, "add", "mul")


def feeds_masks(node: torch.fx.Node, made_from_sizes: Callable[[Any], bool]) -> bool:
    """Whether every use of `node` (a tensor made from sizes), followed through what is computed from it alone,
    ends as a mask. `made_from_sizes(arg)` tells whether an fx argument holds no tensor the forward receives or
    computes (a number, a size, another such tensor)."""
    return bool(node.users) and all(_ends_as_mask(node, user, made_from_sizes) for user in node.users)


def _ends_as_mask(node: torch.fx.Node, user: torch.fx.Node, made_from_sizes: Callable[[Any], bool]) -> bool:
    target, args = user.target, user.args
    if _is_mask_slot(node, user):
        return True
    alone = all(made_from_sizes(arg) for arg in (*args, *user.kwargs.values()) if arg is not node)
    if target in _COMBINING and not alone:  # a mask added or multiplied into a value; a bare factory is a number
        return node.target not in FACTORIES
    passing = target in _COMBINING or target in _PASSING_FUNCTIONS or target in _PASSING_METHODS or \
        (target == "masked_fill" and args[0] is node)
    return passing and alone and feeds_masks(user, made_from_sizes)


def _is_mask_slot(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    """Whether `user` reads `node` as a mask: where's condition, masked_fill's mask, an attention's attn_mask."""
    target, args, kwargs = user.target, user.args, user.kwargs
    if target is torch.where:
        return args[0] is node
    if target == "where" or target == "masked_fill" or target is torch.masked_fill:
        return (args[1] if len(args) > 1 else kwargs.get("mask", kwargs.get("condition"))) is node
    if target is F.scaled_dot_product_attention:
        return (args[3] if len(args) > 3 else kwargs.get("attn_mask")) is node
    if user.op == "call_module":  # a layer given `attn_mask=` (nn.MultiheadAttention)
        return (args[5] if len(args) > 5 else kwargs.get("attn_mask")) is node
    return False
