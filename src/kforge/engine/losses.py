"""Loss functions written as IR nodes the backends know (a `decompose.Builder` adds them), with torch's
reductions: 'none' (one loss per item), 'sum', 'mean' (and kl_div's 'batchmean': the sum over the batch size).

- cross entropy with class indices, the classes along dim 1 of x (N, C, ...) and t (N, ...) int64: the loss of an
  item is `logsumexp(x) - x[t]`, where `x[t]` is the sum over the classes of x where the class index (a `fill`
  along dim 1) equals t. Items whose target is `ignore_index` count as zero, and 'mean' divides by the items
  counted. With class probabilities (t of x's shape): `-sum(t * log_softmax(x))` over dim 1;
- smooth L1: `0.5 * d^2 / beta` where `|d| < beta`, else `|d| - 0.5 * beta` (`|d|` for beta 0);
- KL divergence (`F.kl_div(input, target)`, input log-probabilities): `xlogy(t, t) - t * input`, with
  `xlogy(t, t)` 0 where t is 0; `exp(t) * (t - input)` for log targets;
- triplet margin: `max(margin + d(a, p) - d(a, n), 0)`, d the p-norm of `x1 - x2 + eps` over the last dim,
  `d(a, n)` the smaller of it and `d(p, n)` with `swap`.

Every function takes value names and returns the name of the loss, the last node it adds named `name`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kforge.engine import decompose, ir
from kforge.engine.decompose import Builder

REDUCTIONS = ("none", "mean", "sum")


class _Steps:
    """Adds nodes named `<name>_<label>` (the last one `name` itself), each of a given shape and dtype."""

    def __init__(self, builder: Builder, name: str) -> None:
        self.builder = builder
        self.name = name

    def node(self, label: str, op: str, args: Sequence[ir.Arg], like: str, dtype: str | None = None,
             **attrs: object) -> str:
        spec = self.builder.value(like)
        static = tuple(spec.is_static(d) for d in range(len(spec.shape)))
        return self.builder.add(f"{self.name}_{label}", op, args, spec.shape, dtype or spec.dtype, static, **attrs)

    def shaped(self, label: str, op: str, args: Sequence[ir.Arg], result_shape: ir.Shape, static: Sequence[bool],
               dtype: str, **attrs: object) -> str:
        return self.builder.add(f"{self.name}_{label}", op, args, result_shape, dtype, static, **attrs)


def _kept_static(spec: ir.TensorSpec | ir.Node, dim: int) -> tuple[bool, ...]:
    return tuple(d == dim or spec.is_static(d) for d in range(len(spec.shape)))


def _spanned(spec: ir.TensorSpec | ir.Node) -> list[int]:
    """The dims a reduction over every element must walk: all but those of size one on every input set."""
    return [d for d, size in enumerate(spec.shape) if size != 1 or not spec.is_static(d)]


def _reduced(builder: Builder, name: str, loss: str, reduction: str, count: ir.Arg | None = None) -> str:
    """`loss` reduced as torch reduces it: 'none' a view of it named `name`; 'sum' and 'mean' over every dim
    ('mean' divided by `count` when given: a value of one element, or a number)."""
    spec = builder.value(loss)
    static = tuple(spec.is_static(d) for d in range(len(spec.shape)))
    if reduction == "none":
        return builder.add(name, "view", (loss,), spec.shape, spec.dtype, static, shape=spec.shape)
    dims = _spanned(spec)
    if reduction == "sum" or count is None:
        return decompose.reduce_dims(builder, name, reduction, loss, dims, False)
    total = decompose.reduce_dims(builder, f"{name}_total", "sum", loss, dims, True)
    ones = (1,) * len(spec.shape)
    mean = builder.add(f"{name}_kept", "div", (total, count), ones, spec.dtype, (True,) * len(ones))
    return builder.add(name, "view", (mean,), (), spec.dtype, (), shape=())


def cross_entropy(builder: Builder, name: str, x: str, target: str, *, device: str, reduction: str,
                  ignore_index: int) -> str:
    """Cross entropy of logits `x` (N, C, ...) against class indices or class probabilities."""
    spec, target_spec = builder.value(x), builder.value(target)
    if target_spec.dtype in ir.FLOAT_DTYPES:
        return _cross_entropy_soft(builder, name, x, target, reduction)
    steps = _Steps(builder, name)
    rank, classes = len(spec.shape), spec.shape[1]
    kept = tuple(1 if d == 1 else size for d, size in enumerate(spec.shape))
    static = _kept_static(spec, 1)
    index_shape = tuple(classes if d == 1 else 1 for d in range(rank))
    index = steps.shaped("class", "fill", (device,), index_shape, (True,) * rank, "int64", start=0.0, step=1.0,
                         dim=1)
    wanted = steps.shaped("target", "view", (target,), kept, static, target_spec.dtype, shape=kept)
    hit = steps.node("hit", "eq", (wanted, index), x, "bool")
    picked = steps.node("picked", "where", (hit, x, 0.0), x)
    chosen = steps.shaped("chosen", "sum", (picked,), kept, static, spec.dtype, dim=1, keepdim=True)
    total = steps.shaped("logsumexp", "logsumexp", (x,), kept, static, spec.dtype, dim=1, keepdim=True)
    nll = steps.shaped("nll", "sub", (total, chosen), kept, static, spec.dtype)
    counted = steps.shaped("counted", "ne", (wanted, float(ignore_index)), kept, static, "bool")
    loss = steps.shaped("loss", "where", (counted, nll, 0.0), kept, static, spec.dtype)
    if reduction == "none":
        return _without_dim(builder, name, loss, 1)
    count = None
    if reduction == "mean":
        weights = steps.shaped("weights", "cast", (counted,), kept, static, spec.dtype)
        count = decompose.reduce_dims(builder, f"{name}_count", "sum", weights, _spanned(builder.value(weights)),
                                      True)
    return _reduced(builder, name, loss, reduction, count)


def _cross_entropy_soft(builder: Builder, name: str, x: str, target: str, reduction: str) -> str:
    steps = _Steps(builder, name)
    spec = builder.value(x)
    kept = tuple(1 if d == 1 else size for d, size in enumerate(spec.shape))
    logs = steps.node("log_softmax", "log_softmax", (x,), x, dim=1)
    weighted = steps.node("weighted", "mul", (target, logs), x)
    total = steps.shaped("total", "sum", (weighted,), kept, _kept_static(spec, 1), spec.dtype, dim=1, keepdim=True)
    loss = steps.shaped("loss", "neg", (total,), kept, _kept_static(spec, 1), spec.dtype)
    if reduction == "none":
        return _without_dim(builder, name, loss, 1)
    return _reduced(builder, name, loss, reduction)


def _without_dim(builder: Builder, name: str, value: str, dim: int) -> str:
    spec = builder.value(value)
    shape = tuple(size for d, size in enumerate(spec.shape) if d != dim)
    static = tuple(spec.is_static(d) for d in range(len(spec.shape)) if d != dim)
    return builder.add(name, "view", (value,), shape, spec.dtype, static, shape=shape)


def smooth_l1(builder: Builder, name: str, x: str, y: str, *, like: str, beta: float, reduction: str) -> str:
    """Smooth L1 of `x - y`; `like` is a value of the broadcast shape (x or y)."""
    steps = _Steps(builder, name)
    difference = steps.node("difference", "sub", (x, y), like)
    size = steps.node("size", "abs", (difference,), like)
    if beta == 0:
        return _reduced(builder, name, size, reduction)
    small = steps.node("small", "lt", (size, float(beta)), like, "bool")
    square = steps.node("square", "mul", (difference, difference), like)
    quadratic = steps.node("quadratic", "mul", (square, 0.5 / beta), like)
    linear = steps.node("linear", "sub", (size, 0.5 * beta), like)
    loss = steps.node("loss", "where", (small, quadratic, linear), like)
    return _reduced(builder, name, loss, reduction)


def kl_div(builder: Builder, name: str, x: str, target: str, *, like: str, reduction: str,
           log_target: bool) -> str:
    """KL divergence of log-probabilities `x` against `target`; `like` is a value of the broadcast shape."""
    steps = _Steps(builder, name)
    if log_target:
        probability = steps.node("probability", "exp", (target,), target)
        gap = steps.node("gap", "sub", (target, x), like)
        loss = steps.node("loss", "mul", (probability, gap), like)
    else:
        logs = steps.node("log", "log", (target,), target)
        product = steps.node("product", "mul", (target, logs), target)
        zero = steps.node("zero", "eq", (target, 0.0), target, "bool")
        entropy = steps.node("entropy", "where", (zero, 0.0, product), target)
        cross = steps.node("cross", "mul", (target, x), like)
        loss = steps.node("loss", "sub", (entropy, cross), like)
    if reduction != "batchmean":
        return _reduced(builder, name, loss, reduction)
    spec = builder.value(loss)
    batch: ir.Arg = float(spec.shape[0]) if spec.is_static(0) else builder.add(
        f"{name}_batch", "size", (loss,), (), "float64", (), dim=0)
    total = decompose.reduce_dims(builder, f"{name}_total", "sum", loss, _spanned(spec), True)
    ones = (1,) * len(spec.shape)
    mean = builder.add(f"{name}_kept", "div", (total, batch), ones, spec.dtype, (True,) * len(ones))
    return builder.add(name, "view", (mean,), (), spec.dtype, (), shape=())


def _distance(steps: _Steps, label: str, a: str, b: str, like: str, p: float, eps: float) -> str:
    """The p-norm of `a - b + eps` over the last dim (kept)."""
    spec = steps.builder.value(like)
    last = len(spec.shape) - 1
    kept = (*spec.shape[:-1], 1)
    static = _kept_static(spec, last)
    gap = steps.node(f"{label}_gap", "sub", (a, b), like)
    shifted = steps.node(f"{label}_shifted", "add", (gap, float(eps)), like)
    size = steps.node(f"{label}_size", "abs", (shifted,), like)
    if math.isinf(p):
        return steps.shaped(label, "amax", (size,), kept, static, spec.dtype, dim=last, keepdim=True)
    if p == 1:
        return steps.shaped(label, "sum", (size,), kept, static, spec.dtype, dim=last, keepdim=True)
    power = steps.node(f"{label}_power", "mul" if p == 2 else "pow", (size, size if p == 2 else float(p)), like)
    total = steps.shaped(f"{label}_total", "sum", (power,), kept, static, spec.dtype, dim=last, keepdim=True)
    if p == 2:
        return steps.shaped(label, "sqrt", (total,), kept, static, spec.dtype)
    return steps.shaped(label, "pow", (total, 1.0 / p), kept, static, spec.dtype)


def triplet_margin(builder: Builder, name: str, anchor: str, positive: str, negative: str, *, like: str,
                   margin: float, p: float, eps: float, swap: bool, reduction: str) -> str:
    """Triplet margin loss of (N, D) (or (D,)) embeddings; `like` is a value of the broadcast shape."""
    steps = _Steps(builder, name)
    near = _distance(steps, "positive", anchor, positive, like, p, eps)
    far = _distance(steps, "negative", anchor, negative, like, p, eps)
    if swap:
        other = _distance(steps, "swapped", positive, negative, like, p, eps)
        far = steps.node("farthest", "minimum", (far, other), far)
    gap = steps.node("gap", "sub", (near, far), near)
    shifted = steps.node("shifted", "add", (gap, float(margin)), near)
    loss = steps.node("loss", "relu", (shifted,), near)
    return _reduced(builder, name, _without_dim(builder, f"{name}_items", loss, len(builder.value(loss).shape) - 1),
                    reduction)
