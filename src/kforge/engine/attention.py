"""Attention as IR nodes: `F.scaled_dot_product_attention` with a causal flag or a mask, and
`nn.MultiheadAttention`.

Without a mask, or with the causal one, attention is one fused node (`attention`: an online softmax, the
scores never in memory). Any other mask, or attention weights the forward reads, is written out: the scores
as a batched GEMM, scaled, masked (a triangle as a `tril`/`triu` with a -inf fill, a boolean tensor through
`where`, a float one added), a row softmax and a second GEMM. A multi-head layer is its input projections
(one GEMM when query, key and value are one tensor), heads cut by a view and a permute, that attention, the
heads joined back and the output projection, in either layout (`batch_first` or sequence first).

Functions raise `ValueError` with the detail capture puts in its one-line refusal.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Protocol

import torch.nn as nn

from kforge.engine import decompose, ir
from kforge.engine.constants import Triangle

Mask = Triangle | str | None


class Builder(decompose.Builder, Protocol):
    """What attention needs from capture beyond a decomposition's: a batched matmul over matching batch dims."""

    def matmul(self, name: str, a: str, b: str) -> str: ...


def _static(spec: ir.TensorSpec | ir.Node) -> tuple[bool, ...]:
    return tuple(spec.is_static(d) for d in range(len(spec.shape)))


def _permute(builder: Builder, name: str, x: str, dims: Sequence[int]) -> str:
    spec = builder.value(x)
    return builder.add(name, "permute", (x,), tuple(spec.shape[d] for d in dims), spec.dtype,
                       tuple(spec.is_static(d) for d in dims), dims=tuple(dims))


def _view(builder: Builder, name: str, x: str, shape: tuple[int, ...], static: Sequence[bool]) -> str:
    return builder.add(name, "view", (x,), shape, builder.value(x).dtype, static, shape=shape)


def scaled_dot_product(builder: Builder, name: str, q: str, k: str, v: str, *, scale: float | None, mask: Mask,
                       weights: bool = False) -> tuple[str, str | None]:
    """softmax(q k^T * scale, masked) v, and the softmax's weights when `weights` asks for them (the written-out
    form). The default scale is 1/sqrt(q's last dim)."""
    spec_q, spec_k, spec_v = (builder.value(x) for x in (q, k, v))
    scale = float(scale) if scale is not None else spec_q.shape[-1] ** -0.5
    fused = mask is None or (isinstance(mask, Triangle) and mask.causal)
    alike = spec_q.shape[:-2] == spec_k.shape[:-2] == spec_v.shape[:-2] and \
        spec_q.dtype == spec_k.dtype == spec_v.dtype
    if fused and not weights and len(spec_q.shape) >= 3 and alike:
        shape = (*spec_q.shape[:-1], spec_v.shape[-1])
        static = (*_static(spec_q)[:-1], spec_v.is_static(len(shape) - 1))
        return builder.add(name, "attention", (q, k, v), shape, spec_q.dtype, static, scale=scale,
                           causal=mask is not None), None
    rank = len(spec_k.shape)
    order = [*range(rank - 2), rank - 1, rank - 2]
    scores = builder.matmul(f"{name}_scores", q, _permute(builder, f"{name}_key_t", k, order))
    spec = builder.value(scores)
    static = _static(spec)
    scaled = builder.add(f"{name}_scaled", "mul", (scores, scale), spec.shape, spec.dtype, static)
    masked = _masked(builder, f"{name}_masked", scaled, mask)
    softmax = builder.add(f"{name}_weights", "softmax", (masked,), spec.shape, spec.dtype, static,
                          dim=len(spec.shape) - 1)
    return builder.matmul(name, softmax, v), softmax


def _masked(builder: Builder, name: str, scores: str, mask: Mask) -> str:
    """The scores with the mask applied: dropped keys at -inf (a boolean mask keeps where True, a float one is
    added)."""
    if mask is None:
        return scores
    spec = builder.value(scores)
    static = _static(spec)
    if isinstance(mask, Triangle):
        return builder.add(name, mask.op, (scores,), spec.shape, spec.dtype, static, diagonal=mask.diagonal,
                           fill=float("-inf"))
    if builder.value(mask).dtype == "bool":
        return builder.add(name, "where", (mask, scores, float("-inf")), spec.shape, spec.dtype, static)
    return builder.add(name, "add", (scores, mask), spec.shape, spec.dtype, static)


def multihead(builder: Builder, name: str, path: str, module: nn.MultiheadAttention, sources: Sequence[str], *,
              mask: Mask, weights: bool, average: bool) -> tuple[str, str | None]:
    """An `nn.MultiheadAttention` call on (query, key, value): its output and, when `weights`, its attention
    weights (averaged over heads when `average`). `mask` keeps what it names (a boolean mask as the layer's
    `attn_mask` holds it is inverted by the caller)."""
    _check_layer(module, builder.value(sources[0]))
    heads, width = int(module.num_heads), int(module.embed_dim)
    q, k, v = _projections(builder, name, path, module, sources)
    split = [_heads(builder, f"{name}_{role}", x, heads, module.batch_first) for role, x in zip("qkv", (q, k, v),
                                                                                                 strict=True)]
    attended, softmax = scaled_dot_product(builder, f"{name}_attention", *split, scale=None, mask=mask,
                                           weights=weights)
    joined = _join(builder, f"{name}_joined", attended, module.batch_first, width)
    operands: tuple[str, ...] = (joined, builder.param(f"{path}.out_proj.weight"))
    if module.out_proj.bias is not None:
        operands += (builder.param(f"{path}.out_proj.bias"),)
    spec = builder.value(joined)
    out = builder.add(name, "linear", operands, spec.shape, spec.dtype, _static(spec))
    if softmax is None or not average:
        return out, softmax
    return out, decompose.reduce_dims(builder, f"{name}_weights_mean", "mean", softmax, [1], False)


def _check_layer(module: nn.MultiheadAttention, query: ir.TensorSpec | ir.Node) -> None:
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("with bias_k/bias_v or add_zero_attn")
    if module.dropout and module.training:
        raise ValueError("with dropout in training mode")
    if len(query.shape) != 3:
        raise ValueError("of an unbatched input")


def _projections(builder: Builder, name: str, path: str, module: nn.MultiheadAttention,
                 sources: Sequence[str]) -> tuple[str, str, str]:
    """query, key and value projected: one GEMM and three slices of it when the three are one tensor with the
    layer's packed weight, else a GEMM each (a slice of the packed weight, or the layer's own)."""
    width = int(module.embed_dim)
    bias = f"{path}.in_proj_bias" if module.in_proj_bias is not None else None
    if module._qkv_same_embed_dim and len(set(sources)) == 1:
        packed = _linear(builder, f"{name}_qkv", sources[0], builder.param(f"{path}.in_proj_weight"),
                         builder.param(bias) if bias else None)
        return tuple(_slice(builder, f"{name}_{role}_in", packed, -1, i * width, (i + 1) * width)  # type: ignore
                     for i, role in enumerate("qkv"))
    projected = []
    for i, (role, x) in enumerate(zip("qkv", sources, strict=True)):
        if module._qkv_same_embed_dim:
            weight = _slice(builder, f"{name}_{role}_weight", builder.param(f"{path}.in_proj_weight"), 0,
                            i * width, (i + 1) * width)
        else:
            weight = builder.param(f"{path}.{role}_proj_weight")
        part = _slice(builder, f"{name}_{role}_bias", builder.param(bias), 0, i * width, (i + 1) * width) \
            if bias else None
        projected.append(_linear(builder, f"{name}_{role}_in", x, weight, part))
    return projected[0], projected[1], projected[2]


def _linear(builder: Builder, name: str, x: str, weight: str, bias: str | None) -> str:
    spec = builder.value(x)
    rows = builder.value(weight).shape[0]
    return builder.add(name, "linear", (x, weight) + ((bias,) if bias else ()), (*spec.shape[:-1], rows),
                       spec.dtype, (*_static(spec)[:-1], True))


def _slice(builder: Builder, name: str, x: str, dim: int, start: int, stop: int) -> str:
    spec = builder.value(x)
    dim %= len(spec.shape)
    shape = tuple(stop - start if d == dim else n for d, n in enumerate(spec.shape))
    static = tuple(d == dim or spec.is_static(d) for d in range(len(shape)))
    return builder.add(name, "slice", (x,), shape, spec.dtype, static, dim=dim, start=start, stop=stop, step=1)


def _heads(builder: Builder, name: str, x: str, heads: int, batch_first: bool) -> str:
    """(batch, seq, width) or (seq, batch, width) as (batch, heads, seq, width / heads)."""
    spec = builder.value(x)
    first, second, width = spec.shape
    static = _static(spec)
    split = _view(builder, f"{name}_split", x, (first, second, heads, width // heads),
                  (*static[:2], True, True))
    return _permute(builder, f"{name}_heads", split, (0, 2, 1, 3) if batch_first else (1, 2, 0, 3))


def _join(builder: Builder, name: str, x: str, batch_first: bool, width: int) -> str:
    """(batch, heads, seq, width / heads) back as the layer's layout, heads joined in the last dim."""
    moved = _permute(builder, f"{name}_moved", x, (0, 2, 1, 3) if batch_first else (2, 0, 1, 3))
    spec = builder.value(moved)
    return _view(builder, name, moved, (*spec.shape[:2], width), (*_static(spec)[:2], True))


def layer_options(args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """An `nn.MultiheadAttention` call's arguments by name, with the layer's defaults."""
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights",
             "is_causal")
    options: dict[str, Any] = {"key_padding_mask": None, "need_weights": True, "attn_mask": None,
                               "average_attn_weights": True, "is_causal": False}
    options.update(zip(names, args, strict=False))
    options.update(kwargs)
    return options


def uses_second_output(users: Any) -> bool:
    """Whether anything but `result[0]` (or an unused `result[1]`) reads a call's (output, weights) pair."""
    return any(not (user.target is operator.getitem and (user.args[1] == 0 or not user.users)) for user in users)
