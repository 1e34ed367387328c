"""`torch.einsum` of one or two operands written as permutes, views, sums and one GEMM (`matmul` or `bmm`).

Two operands: each letter is a batch letter (in both operands and the output), a contracted one (in both, not in
the output), a free one of one operand (in it and the output), or summed out of its operand first (in neither the
other operand nor the output). The left operand is permuted to (batch, free, contracted) and viewed as (B, M, K),
the right one to (batch, contracted, free) as (B, K, N); their product (a `bmm`, or a `matmul` without batch
letters) is viewed back to (batch, free left, free right) and permuted to the output's order. One operand: a sum
over the letters the output drops, then a permute. Repeated letters in one operand (diagonals) and ellipses are
refused (`EinsumError`, whose message capture puts in its one line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kforge.engine import decompose, ir
from kforge.engine.decompose import Builder


class EinsumError(ValueError):
    """An equation outside the forms lowered here."""


def parse(equation: str, count: int) -> tuple[list[str], str]:
    """The operands' letters and the output's (implicit output: the letters used once, in alphabetical order)."""
    text = equation.replace(" ", "")
    if "." in text:
        raise EinsumError("with an ellipsis")
    inputs, _, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != count or count not in (1, 2):
        raise EinsumError("of other than one or two operands")
    if "->" not in text:
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    for term in (*terms, output):
        if len(set(term)) != len(term):
            raise EinsumError("with a repeated letter in one term (a diagonal)")
    if not set(output) <= set("".join(terms)):
        raise EinsumError("with an output letter no operand has")
    return terms, output


def einsum(builder: Builder, name: str, equation: str, operands: Sequence[str]) -> str:
    terms, output = parse(equation, len(operands))
    for term, operand in zip(terms, operands, strict=True):
        if len(term) != len(builder.value(operand).shape):
            raise EinsumError("with a term whose letters do not match its operand's dims")
    if len(operands) == 1:
        summed, term = _summed_out(builder, f"{name}_a", operands[0], terms[0], set(output))
        return _permuted(builder, name, summed, term, output)
    keep_a = set(output) | set(terms[1])
    keep_b = set(output) | set(terms[0])
    a, term_a = _summed_out(builder, f"{name}_a", operands[0], terms[0], keep_a)
    b, term_b = _summed_out(builder, f"{name}_b", operands[1], terms[1], keep_b)
    batch = [c for c in output if c in term_a and c in term_b]
    left = [c for c in output if c in term_a and c not in term_b]
    right = [c for c in output if c in term_b and c not in term_a]
    contracted = [c for c in term_a if c in term_b and c not in output]
    a3 = _grouped(builder, f"{name}_left", a, term_a, [batch, left, contracted])
    b3 = _grouped(builder, f"{name}_right", b, term_b, [batch, contracted, right])
    spec_a, spec_b = builder.value(a3), builder.value(b3)
    product_shape = (*spec_a.shape[:-1], spec_b.shape[-1])
    product_static = (*(spec_a.is_static(d) for d in range(len(spec_a.shape) - 1)),
                      spec_b.is_static(len(spec_b.shape) - 1))
    product = builder.add(f"{name}_product", "bmm" if batch else "matmul", (a3, b3), product_shape, spec_a.dtype,
                          product_static)
    sizes = _sizes(builder, [(a, term_a), (b, term_b)])
    letters = "".join(batch + left + right)
    flat = _view(builder, f"{name}_unflat", product, tuple(sizes[c][0] for c in letters),
                 tuple(sizes[c][1] for c in letters))
    return _permuted(builder, name, flat, letters, output)


def _sizes(builder: Builder, terms: Sequence[tuple[str, str]]) -> dict[str, tuple[int, bool]]:
    """Each letter's (size, static) from the operands that have it."""
    found: dict[str, tuple[int, bool]] = {}
    for operand, term in terms:
        spec = builder.value(operand)
        for d, letter in enumerate(term):
            found.setdefault(letter, (spec.shape[d], spec.is_static(d)))
    return found


def _summed_out(builder: Builder, name: str, x: str, term: str, kept: set[str]) -> tuple[str, str]:
    """`x` summed over its letters not in `kept`; the value and its letters."""
    dims = [d for d, letter in enumerate(term) if letter not in kept]
    if not dims:
        return x, term
    return decompose.reduce_dims(builder, f"{name}_summed", "sum", x, dims, False), \
        "".join(letter for letter in term if letter in kept)


def _permuted(builder: Builder, name: str, x: str, term: str, order: str) -> str:
    """`x` (letters `term`) permuted to `order`, the result named `name` (a view when nothing moves)."""
    spec = builder.value(x)
    dims = tuple(term.index(letter) for letter in order)
    shape = tuple(spec.shape[d] for d in dims)
    static = tuple(spec.is_static(d) for d in dims)
    if dims == tuple(range(len(dims))):
        return builder.add(name, "view", (x,), shape, spec.dtype, static, shape=shape)
    return builder.add(name, "permute", (x,), shape, spec.dtype, static, dims=dims)


def _grouped(builder: Builder, name: str, x: str, term: str, groups: Sequence[Sequence[str]]) -> str:
    """`x` permuted so that the groups' letters come in order, viewed with one dim per group (a group without
    letters a dim of 1; the first group, the batch, left out when it has none)."""
    order = "".join(letter for group in groups for letter in group)
    moved = _permuted(builder, f"{name}_ordered", x, term, order) if order != term else x
    spec = builder.value(moved)
    shape: list[int] = []
    static: list[bool] = []
    at = 0
    for index, group in enumerate(groups):
        if index == 0 and not group:
            continue
        shape.append(math.prod(spec.shape[at:at + len(group)]))
        static.append(all(spec.is_static(d) for d in range(at, at + len(group))))
        at += len(group)
    return _view(builder, name, moved, tuple(shape), tuple(static))


def _view(builder: Builder, name: str, x: str, shape: ir.Shape, static: tuple[bool, ...]) -> str:
    if sum(not flag for flag in static) > 1:
        raise EinsumError("over several letters whose sizes vary between input sets")
    return builder.add(name, "view", (x,), shape, builder.value(x).dtype, static, shape=shape)
