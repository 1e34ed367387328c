"""The fast path of a generated Triton `forward`: what the engine knows when it renders, spent on a cheaper call.

The harness times each call with the stream idle, so the host's time to issue it counts in full: every
framework call (`reshape`, `expand`, `broadcast_shapes`, `stride`) and every kernel argument (the launcher
type-checks and specialises each one) costs microseconds on a GPU host. What never changes between calls is
settled at render time instead:

- a parameter (or a reshape of one: the same elements in the same order) is passed as it is and indexed with
  an expression built from its fixed shape (`row % 64`), not with four strides;
- operands whose sizes vary are read as one contiguous block when they are contiguous and have the output's
  shape, which one cheap test (`condition`) checks at run time; anything else takes the general path.

Nothing here depends on input values or output tensors: only on shapes and layouts, checked on every call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kforge.engine.ir import Node, Program

_NAME = re.compile(r"[A-Za-z_]\w*")


def param_root(program: Program, name: str) -> str | None:
    """The parameter whose elements `name` holds in the same order (itself, or a reshape of it); else None."""
    params = {spec.name for spec in program.params}
    while name not in params:
        spec = program.spec(name)
        if not isinstance(spec, Node) or spec.op != "view":
            return None
        name = str(spec.args[0])
    return name


def prelude_split(prelude: Sequence[str], wanted: Iterable[str]) -> tuple[list[str], list[str]]:
    """The prelude's lines that the `wanted` Python names need (in order), and the rest.

    Each line is `local = expression`; a line is needed when its local is wanted or feeds a needed line.
    """
    names = set()
    for text in wanted:
        names.update(_NAME.findall(text))
    needed: set[int] = set()
    for index in range(len(prelude) - 1, -1, -1):
        local, expression = prelude[index].split(" = ", 1)
        if local in names:
            needed.add(index)
            names.update(_NAME.findall(expression))
    return ([line for i, line in enumerate(prelude) if i in needed],
            [line for i, line in enumerate(prelude) if i not in needed])


def shape_product(tensor: str, start: int, stop: int) -> str:
    """Python for the product of `tensor`'s sizes in dims [start, stop): 'x.shape[1] * x.shape[2]', or '1'."""
    return " * ".join(f"{tensor}.shape[{d}]" for d in range(start, stop)) or "1"


def aligned(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    """`shape` broadcast-aligned to `rank` dims (leading 1s)."""
    return (1,) * (rank - len(shape)) + tuple(shape)


@dataclass
class Tiling:
    """The output seen as (rows, cols), cols being its dims from `split` on; where fixed operands are read.

    `spans` are the run-time sizes a fixed operand's index needs, as (kernel argument, dims [start, stop));
    `varying` the dims along which some fixed operand varies (the output must have its size there).
    """

    rank: int
    split: int
    spans: list[tuple[str, int, int]] = field(default_factory=list)
    varying: list[int] = field(default_factory=list)

    def cols(self, tensor: str) -> str:
        return shape_product(tensor, self.split, self.rank)

    def span_values(self, tensor: str) -> list[str]:
        return [shape_product(tensor, start, stop) for _, start, stop in self.spans]

    def load(self, arg: str, target: str, shape: Sequence[int]) -> str:
        """The kernel line loading fixed operand `arg` (of `shape`) broadcast over the (rows, cols) tile."""
        dims = aligned(shape, self.rank)
        if math.prod(dims) == 1:
            return f"{target} = tl.load({arg}).to(tl.float32)"
        row_terms, col_term = [], ""
        for d, size in enumerate(dims):
            if size == 1:
                continue
            stride = math.prod(dims[d + 1:])
            if d >= self.split:  # only the last dim can vary among the cols (see `tiling`)
                col_term = "col" if stride == 1 else f"col * {stride}"
                continue
            index = "row" if d + 1 == self.split else f"(row // {self.span(d + 1)})"
            if d > 0:
                index = f"{index} % {size}"
            row_terms.append(index if stride == 1 else f"({index}) * {stride}")
        rows = " + ".join(row_terms)
        if rows and col_term:
            return (f"{target} = tl.load({arg} + ({rows})[:, None] + {col_term}[None, :], mask=mask, "
                    "other=0.0).to(tl.float32)")
        if rows:
            return f"{target} = tl.load({arg} + {rows}, mask=row < rows, other=0.0).to(tl.float32)[:, None]"
        return f"{target} = tl.load({arg} + {col_term}, mask=col < cols, other=0.0).to(tl.float32)[None, :]"

    def span(self, start: int) -> str:
        for name, first, _ in self.spans:
            if first == start:
                return name
        raise KeyError(start)


def tiling(out_shape: Sequence[int], fixed_shapes: Iterable[Sequence[int]]) -> Tiling | None:
    """How to tile an output of `out_shape` so each fixed operand's index is cheap; None when one cannot be.

    The cols are the dims after the last one a fixed operand varies along (the last dim alone when one varies
    along it), so a per-channel operand is indexed by `row % channels`.
    """
    rank = len(out_shape)
    if rank == 0:
        return None
    varying: set[int] = set()
    for shape in fixed_shapes:
        if len(shape) > rank:
            return None
        dims = aligned(shape, rank)
        varying.update(d for d, size in enumerate(dims) if size != 1 and math.prod(dims) != 1)
    last = max(varying, default=rank - 1)
    split = rank - 1 if last == rank - 1 else last + 1
    spans = [(f"span{d + 1}", d + 1, split) for d in sorted(varying) if d + 1 < split]
    return Tiling(rank, split, spans, sorted(varying))
