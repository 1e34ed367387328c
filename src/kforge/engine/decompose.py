"""Decompositions: operators written as several IR nodes that the backends already know.

Capture calls these for operators the IR has no node of its own for; each is exact algebra (up to the order
of floating-point sums), and the partitioner cuts the result into kernels where one kernel cannot hold it:

- a reduction over several dims (or all of them): one reduction per dim, each keeping its dim, the last
  followed by a view that drops the reduced dims. Sum, mean, max, min and logsumexp all compose this way
  (a mean of equal-sized means is the mean; a logsumexp of logsumexps is the logsumexp);
- batch norm: `(x - mean) * rsqrt(var + eps) * weight + bias` over the channel dim (dim 1), with the running
  statistics in evaluation mode and the batch's own (mean, biased variance) in training mode, as the reference
  normalizes: those come from one `moments` node (a kernel of its own, reading each channel twice: its mean,
  then its squared deviations), the rest is pointwise. In training mode the layer's buffers move too
  (`running_statistics`): the count plus one, each running statistic a step of `momentum` towards the batch's
  (the variance unbiased), computed from the same `moments` as small pointwise kernels whose values the forward
  writes into the buffers (`ir.Program.updates`);
- group norm (and instance norm, one group per channel): the input viewed as (batch, groups, rest), a layer
  norm over the rest without weights, viewed back, then the per-channel affine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from kforge.engine import ir


class Builder(Protocol):
    """What a decomposition needs from capture: adding nodes, and reading the parameters and values it has."""

    def add(self, name: str, op: str, args: Sequence[ir.Arg], result_shape: ir.Shape, dtype: str,
            static: Sequence[bool], **attrs: Any) -> str: ...

    def value(self, name: str) -> ir.TensorSpec | ir.Node: ...

    def param(self, path: str) -> str: ...


def _static(spec: ir.TensorSpec | ir.Node) -> tuple[bool, ...]:
    return tuple(spec.is_static(d) for d in range(len(spec.shape)))


def reduce_dims(builder: Builder, name: str, op: str, x: str, dims: Sequence[int], keepdim: bool) -> str:
    """`op` of `x` over `dims` (non-negative, distinct) as one keepdim reduction per dim; the result is `name`.
    Trailing dims of static sizes are first viewed as one (a reshape, no copy for a contiguous tensor), so a
    reduction over the last k dims is one kernel."""
    spec = builder.value(x)
    rank = len(spec.shape)
    ordered = sorted(set(dims), reverse=True)
    trailing = [d for d in range(rank - 1, -1, -1) if d in ordered and all(e in ordered for e in range(d, rank))]
    if len(trailing) > 1 and all(spec.is_static(d) for d in trailing):
        first = trailing[-1]
        merged_shape = (*spec.shape[:first], math.prod(spec.shape[first:]))
        merged_static = (*_static(spec)[:first], True)
        merged = builder.add(f"{name}_merged", "view", (x,), merged_shape, spec.dtype, merged_static,
                             shape=merged_shape)
        rest = [d for d in ordered if d < first] + [first]
        reduced = reduce_dims(builder, f"{name}_flat" if keepdim else name, op, merged, rest, keepdim)
        if not keepdim:
            return reduced
        kept_shape = tuple(1 if d in ordered else size for d, size in enumerate(spec.shape))
        kept_static = tuple(d in ordered or spec.is_static(d) for d in range(rank))
        return builder.add(name, "view", (reduced,), kept_shape, spec.dtype, kept_static, shape=kept_shape)
    shape, static = list(spec.shape), list(_static(spec))
    current = x
    for position, dim in enumerate(ordered):
        shape[dim], static[dim] = 1, True
        last = position == len(ordered) - 1
        step_name = name if last and keepdim else f"{name}_over{dim}"
        current = builder.add(step_name, op, (current,), tuple(shape), spec.dtype, static, dim=dim, keepdim=True)
    if keepdim:
        return current
    kept = [d for d in range(len(shape)) if d not in ordered]
    return builder.add(name, "view", (current,), tuple(shape[d] for d in kept), spec.dtype,
                       [static[d] for d in kept], shape=tuple(shape[d] for d in kept))


def _per_channel(builder: Builder, name: str, param: str, rank: int) -> str:
    """A per-channel parameter of shape (C,) viewed to broadcast along dim 1 of a rank-`rank` tensor."""
    spec = builder.value(param)
    shape = (spec.shape[0],) + (1,) * (rank - 2)
    return builder.add(name, "view", (param,), shape, spec.dtype, [True] * len(shape), shape=shape)


def _affine(builder: Builder, name: str, normed: str, weight: str | None, bias: str | None) -> str:
    spec = builder.value(normed)
    rank, static = len(spec.shape), _static(spec)
    result = normed
    if weight is not None:
        w = _per_channel(builder, f"{name}_weight", weight, rank)
        result = builder.add(name if bias is None else f"{name}_scaled", "mul", (result, w), spec.shape, spec.dtype,
                             static)
    if bias is not None:
        b = _per_channel(builder, f"{name}_bias", bias, rank)
        result = builder.add(name, "add", (result, b), spec.shape, spec.dtype, static)
    return result


def batch_norm(builder: Builder, name: str, x: str, *, running: tuple[str, str] | None, weight: str | None,
               bias: str | None, eps: float) -> str:
    """Batch norm of `x` (batch, channels, ...): `running` (mean, var) param names in evaluation mode, None to
    normalize with the batch's statistics (training mode)."""
    spec = builder.value(x)
    rank, static, shape = len(spec.shape), _static(spec), spec.shape
    if rank < 2:
        raise ValueError("batch norm needs (batch, channels, ...)")
    if running is None:
        return _batch_norm_training(builder, name, x, weight=weight, bias=bias, eps=eps)
    plain = name if weight is None and bias is None else f"{name}_normed"
    mean = _per_channel(builder, f"{name}_mean", running[0], rank)
    var = _per_channel(builder, f"{name}_var", running[1], rank)
    centered = builder.add(f"{name}_centered", "sub", (x, mean), shape, spec.dtype, static)
    normed = _scaled_by_inv_std(builder, name, plain, centered, var, eps)
    return _affine(builder, name, normed, weight, bias)


def _scaled_by_inv_std(builder: Builder, name: str, result: str, centered: str, var: str, eps: float) -> str:
    """`centered * rsqrt(var + eps)`, named `result`."""
    var_spec, spec = builder.value(var), builder.value(centered)
    shifted = builder.add(f"{name}_var_eps", "add", (var, float(eps)), var_spec.shape, var_spec.dtype,
                          _static(var_spec))
    scale = builder.add(f"{name}_inv_std", "rsqrt", (shifted,), var_spec.shape, var_spec.dtype, _static(var_spec))
    return builder.add(result, "mul", (centered, scale), spec.shape, spec.dtype, _static(spec))


def _batch_norm_training(builder: Builder, name: str, x: str, *, weight: str | None, bias: str | None,
                         eps: float) -> str:
    """Batch norm with the batch's own statistics: one `moments` kernel for every channel's mean and variance
    (float32, read back through views), then pointwise work in float32, narrowed to x's dtype at the end (as
    torch computes a half-precision batch norm)."""
    spec = builder.value(x)
    rank, static, shape = len(spec.shape), _static(spec), spec.shape
    channels = shape[1]
    moments = builder.add(f"{name}_moments", "moments", (x,), (2, channels), "float32", (True, static[1]))
    kept = (1, channels) + (1,) * (rank - 2)
    kept_static = (True, static[1]) + (True,) * (rank - 2)
    stats = []
    for row, label in enumerate(("mean", "var")):
        picked = builder.add(f"{name}_{label}_row", "slice", (moments,), (1, channels), "float32",
                             (True, static[1]), dim=0, start=row, stop=row + 1, step=1)
        stats.append(builder.add(f"{name}_{label}", "view", (picked,), kept, "float32", kept_static, shape=kept))
    wide = x if spec.dtype == "float32" else builder.add(f"{name}_wide", "cast", (x,), shape, "float32", static)
    narrow = spec.dtype != "float32"
    affine = weight is not None or bias is not None
    centered = builder.add(f"{name}_centered", "sub", (wide, stats[0]), shape, "float32", static)
    plain = f"{name}_normed" if affine or narrow else name
    normed = _scaled_by_inv_std(builder, name, plain, centered, stats[1], eps)
    result = _affine(builder, f"{name}_affine" if narrow else name, normed, weight, bias) if affine else normed
    if narrow:
        result = builder.add(name, "cast", (result,), shape, spec.dtype, static)
    return result


def running_statistics(builder: Builder, name: str, x: str, *, mean: str, var: str, count: str | None,
                       momentum: float | None) -> list[tuple[str, str]]:
    """The new values of a training-mode batch norm's buffers, as torch writes them after normalizing `x` with the
    batch's statistics (the `moments` rows `batch_norm` made under `name`): (buffer path, value) pairs.

    `count` (num_batches_tracked) goes up by one. A running statistic `r` becomes `(1 - m) * r + m * batch`, with
    the batch's variance unbiased (times n / (n - 1), n the values per channel) and `m` the momentum, or with
    `momentum` None `1 / count` after the increment: the average over every batch counted. The arithmetic is
    float32, the result in the buffer's dtype."""
    spec = builder.value(x)
    channels, static = spec.shape[1], (spec.is_static(1),)
    written: list[tuple[str, str]] = []
    step: ir.Arg | None = momentum
    if count is not None:
        counted = builder.add(f"{name}_count", "view", (count,), (1,), "int64", (True,), shape=(1,))
        written.append((count, builder.add(f"{name}_count_next", "add", (counted, 1.0), (1,), "int64", (True,))))
        if momentum is None:
            wide = builder.add(f"{name}_count_float", "cast", (written[0][1],), (1,), "float32", (True,))
            step = builder.add(f"{name}_step", "reciprocal", (wide,), (1,), "float32", (True,))
    if step is None:
        raise ValueError("a cumulative average (momentum None) without a count of batches")
    if step == 0.0:
        return written  # a momentum of 0 leaves the statistics as they are
    unbiased = _unbiased_factor(builder, name, x)
    for label, path, factor in (("mean", mean, None), ("var", var, unbiased)):
        batch = builder.add(f"{name}_batch_{label}", "view", (f"{name}_{label}_row",), (channels,), "float32",
                            static, shape=(channels,))
        if factor is not None:
            batch = builder.add(f"{name}_batch_{label}_unbiased", "mul", (batch, factor), (channels,), "float32",
                                static)
        written.append((path, _moved(builder, f"{name}_running_{label}", path, batch, step)))
    return written


def _unbiased_factor(builder: Builder, name: str, x: str) -> ir.Arg:
    """n / (n - 1), n the values per channel of `x` (every dim but 1): a constant where those dims are static, else
    a scalar computed from the sizes at run time."""
    spec = builder.value(x)
    others = [d for d in range(len(spec.shape)) if d != 1]
    fixed = math.prod(spec.shape[d] for d in others if spec.is_static(d))
    varying = [d for d in others if not spec.is_static(d)]
    if not varying:
        if fixed < 2:
            raise ValueError("batch statistics of one value per channel")
        return fixed / (fixed - 1)
    values: str = builder.add(f"{name}_size{varying[0]}", "size", (x,), (), "float64", (), dim=varying[0])
    for d in varying[1:]:
        size = builder.add(f"{name}_size{d}", "size", (x,), (), "float64", (), dim=d)
        values = builder.add(f"{name}_values_{d}", "mul", (values, size), (), "float64", ())
    if fixed != 1:
        values = builder.add(f"{name}_values", "mul", (values, float(fixed)), (), "float64", ())
    less = builder.add(f"{name}_values_less_one", "sub", (values, 1.0), (), "float64", ())
    return builder.add(f"{name}_unbiased", "div", (values, less), (), "float64", ())


def _moved(builder: Builder, result: str, path: str, batch: str, step: ir.Arg) -> str:
    """`(1 - step) * running + step * batch` in float32 (step a float, or a value of one element), named `result`
    in the buffer's dtype."""
    spec = builder.value(path)
    shape, static = spec.shape, _static(spec)
    running = path if spec.dtype == "float32" else builder.add(f"{result}_wide", "cast", (path,), shape, "float32",
                                                               static)
    if isinstance(step, str):
        shrunk = builder.add(f"{result}_shrunk", "mul", (running, step), shape, "float32", static)
        kept = builder.add(f"{result}_kept", "sub", (running, shrunk), shape, "float32", static)
    else:
        kept = builder.add(f"{result}_kept", "mul", (running, 1.0 - float(step)), shape, "float32", static)
    moved = builder.add(f"{result}_moved", "mul", (batch, step), shape, "float32", static)
    if spec.dtype == "float32":
        return builder.add(result, "add", (kept, moved), shape, "float32", static)
    total = builder.add(f"{result}_float", "add", (kept, moved), shape, "float32", static)
    return builder.add(result, "cast", (total,), shape, spec.dtype, static)


def group_norm(builder: Builder, name: str, x: str, *, groups: int, weight: str | None, bias: str | None,
               eps: float) -> str:
    """Group norm of `x` (batch, channels, ...) with `groups` groups of channels."""
    spec = builder.value(x)
    shape, static = spec.shape, _static(spec)
    if len(shape) < 2 or shape[1] % groups:
        raise ValueError("group norm needs (batch, channels, ...) with channels a multiple of the groups")
    if not all(static[1:]):
        raise ValueError("group norm over channels or sizes that vary between input sets")
    rest = 1
    for size in shape[1:]:
        rest *= size
    grouped_shape = (shape[0], groups, rest // groups)
    grouped = builder.add(f"{name}_grouped", "view", (x,), grouped_shape, spec.dtype, (static[0], True, True),
                          shape=grouped_shape)
    normed = builder.add(f"{name}_normed", "layer_norm", (grouped,), grouped_shape, spec.dtype,
                         (static[0], True, True), dim=2, eps=float(eps))
    back = builder.add(name if weight is None and bias is None else f"{name}_back", "view", (normed,), shape,
                       spec.dtype, static, shape=shape)
    return _affine(builder, name, back, weight, bias)


def layer_norm_dims(builder: Builder, name: str, x: str, count: int, *, weight: str | None, bias: str | None,
                    eps: float) -> str:
    """Layer norm over the last `count` dims of `x` (of static sizes): x viewed with those dims as one, a layer norm
    over it without weights, viewed back, then the elementwise weight and bias (of those dims' shape)."""
    spec = builder.value(x)
    shape, static = spec.shape, _static(spec)
    lead = len(shape) - count
    if lead < 0 or not all(static[lead:]):
        raise ValueError("over dims whose sizes vary between input sets")
    flat_shape = (*shape[:lead], math.prod(shape[lead:]))
    flat_static = (*static[:lead], True)
    flat = builder.add(f"{name}_flat", "view", (x,), flat_shape, spec.dtype, flat_static, shape=flat_shape)
    normed = builder.add(f"{name}_normed", "layer_norm", (flat,), flat_shape, spec.dtype, flat_static,
                         dim=len(flat_shape) - 1, eps=float(eps))
    back = name if weight is None and bias is None else f"{name}_back"
    result = builder.add(back, "view", (normed,), shape, spec.dtype, static, shape=shape)
    if weight is not None:
        result = builder.add(name if bias is None else f"{name}_scaled", "mul", (result, weight), shape, spec.dtype,
                             static)
    if bias is not None:
        result = builder.add(name, "add", (result, bias), shape, spec.dtype, static)
    return result


def vector_norm(builder: Builder, name: str, x: str, order: float, dims: Sequence[int], keepdim: bool) -> str:
    """The `order`-norm of `x` over `dims` (non-negative): (sum |x|^p)^(1/p), its limits max |x| and min |x| for
    +-inf, and the count of non-zero elements for 0."""
    spec = builder.value(x)
    shape, static = spec.shape, _static(spec)
    if order == 0:
        nonzero = builder.add(f"{name}_nonzero", "ne", (x, 0.0), shape, "bool", static)
        counted = builder.add(f"{name}_counted", "cast", (nonzero,), shape, spec.dtype, static)
        return reduce_dims(builder, name, "sum", counted, dims, keepdim)
    size = builder.add(f"{name}_abs", "abs", (x,), shape, spec.dtype, static)
    if math.isinf(order):
        return reduce_dims(builder, name, "amax" if order > 0 else "amin", size, dims, keepdim)
    if order == 1:
        return reduce_dims(builder, name, "sum", size, dims, keepdim)
    power = builder.add(f"{name}_power", "mul" if order == 2 else "pow", (size, size if order == 2 else float(order)),
                        shape, spec.dtype, static)
    total = reduce_dims(builder, f"{name}_total", "sum", power, dims, keepdim)
    reduced = builder.value(total)
    root_args: tuple[ir.Arg, ...] = (total,) if order == 2 else (total, 1.0 / order)
    return builder.add(name, "sqrt" if order == 2 else "pow", root_args, reduced.shape, spec.dtype, _static(reduced))
