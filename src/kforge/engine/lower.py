"""Lowering: an `ir.Program` cut into the pieces one fused kernel computes.

A fused epilogue reads *leaves* (inputs, params, prepared values and the heavy op's output, each possibly
seen through views and slices, which cost nothing), computes *scalars* once per call (sizes and math on
them), then per element a chain of *pre* pointwise nodes, at most one reduction or row op over one dim, and
a chain of *post* pointwise nodes that writes the single output. A standalone op (a window, a scan, a mask, a
flip, attention) takes the reduction's place with no pre nodes: its post nodes are its epilogue.
`plan(program)` returns that split or raises LoweringError naming what does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from kforge.engine import ir
from kforge.engine.capture import cannot_lower


@dataclass(frozen=True)
class Leaf:
    """A tensor the epilogue reads: a root value seen through `views` (view and slice nodes, in order)."""

    name: str  # the IR value the epilogue uses
    root: str  # an input, param, prepared value or the heavy output
    views: tuple[ir.Node, ...]
    shape: ir.Shape
    static: tuple[bool, ...]


@dataclass(frozen=True)
class Plan:
    program: ir.Program
    leaves: tuple[Leaf, ...]
    scalars: tuple[ir.Node, ...]
    pre: tuple[ir.Node, ...]
    reduction: ir.Node | None
    post: tuple[ir.Node, ...]
    output: str
    iter_shape: ir.Shape  # the shape the pre nodes compute over (the reduction's input)
    numbers: tuple[str, ...] = ()  # inputs that are Python numbers (`ir.is_number`), run-time scalars as `scalars`

    @property
    def heavy(self) -> ir.Node | None:
        return self.program.heavy

    @property
    def out_shape(self) -> ir.Shape:
        return self.program.shape(self.output)

    def leaf(self, name: str) -> Leaf:
        return next(leaf for leaf in self.leaves if leaf.name == name)

    def leaves_of(self, nodes: tuple[ir.Node, ...]) -> tuple[Leaf, ...]:
        names = {arg for node in nodes for arg in node.value_args}
        return tuple(leaf for leaf in self.leaves if leaf.name in names)


def plan(program: ir.Program) -> Plan:
    """Split `program`'s epilogue for one fused kernel; LoweringError when it has another structure."""
    if len(program.outputs) != 1:
        raise cannot_lower("a forward with several outputs", op=False)
    numbers = tuple(spec.name for spec in program.inputs if ir.is_number(spec))
    roots = {spec.name for spec in (*program.inputs, *program.params)} | {n.name for n in program.prepared}
    roots -= set(numbers)
    if program.heavy is not None:
        roots.add(program.heavy.name)
    leaves: dict[str, Leaf] = {}
    scalars: list[ir.Node] = []
    pre: list[ir.Node] = []
    post: list[ir.Node] = []
    reduction: ir.Node | None = None
    for node in program.nodes:
        if node.op in ir.VIEW_OPS:
            source = node.args[0]
            if source in roots:
                leaves[node.name] = Leaf(node.name, str(source), (node,), node.shape, node.static)
            elif source in leaves:
                base = leaves[str(source)]
                leaves[node.name] = Leaf(node.name, base.root, (*base.views, node), node.shape, node.static)
            else:
                raise cannot_lower(f"{node.op} (a view of a computed value inside the epilogue)")
        elif node.shape == () and node.dtype == "float64":
            scalars.append(node)
        elif node.op in ir.REDUCE_OPS or node.op in ir.INDEX_OPS or node.op in ir.ROW_OPS:
            if reduction is not None:
                raise cannot_lower(f"{node.op} (only one reduction per kernel is supported)")
            reduction = node
        elif node.op in ir.STANDALONE_OPS:
            # A standalone op (kforge.engine.standalone) starts its kernel; pointwise work on its result may
            # follow it there, as an epilogue, where the backend writes one.
            if reduction is not None or pre:
                raise cannot_lower(f"{node.op} (after other work in its kernel)")
            reduction = node
        elif node.op in ir.POINTWISE_OPS:
            (post if reduction is not None else pre).append(node)
        else:
            raise cannot_lower(node.op)
    output = program.outputs[0]
    scalar_names = {s.name for s in scalars}
    for node in (*pre, *post, *((reduction,) if reduction else ())):
        for arg in node.value_args:
            if arg in roots and arg not in leaves:
                spec = program.spec(arg)
                leaves[arg] = Leaf(arg, arg, (), spec.shape, spec.static)
    if output in roots and output not in leaves:
        spec = program.spec(output)
        leaves[output] = Leaf(output, output, (), spec.shape, spec.static)
    if output in scalar_names or output in numbers:
        raise cannot_lower("a forward that returns a scalar computed from sizes", op=False)
    _check_single_reduction_structure(pre, reduction, post, leaves, output)
    iter_shape = program.shape(reduction.args[0]) if reduction is not None and isinstance(reduction.args[0], str) \
        else program.shape(output)
    if not iter_shape:
        raise cannot_lower("a 0-d output", op=False)
    used = {arg for node in (*pre, *post, *((reduction,) if reduction else ())) for arg in node.value_args}
    used.add(output)
    return Plan(program, tuple(leaf for leaf in leaves.values() if leaf.name in used), tuple(scalars), tuple(pre),
                reduction, tuple(post), output, iter_shape, numbers)


def _check_single_reduction_structure(pre: list[ir.Node], reduction: ir.Node | None, post: list[ir.Node],
                                      leaves: dict[str, Leaf], output: str) -> None:
    if reduction is None:
        return
    pre_names = {node.name for node in pre}
    if reduction.op == "layer_norm":
        for extra in reduction.value_args[1:]:
            if extra not in leaves:
                raise cannot_lower("layer_norm (with computed weight or bias)")
    if reduction.op in ir.STANDALONE_OPS:
        for node in post:
            if node.shape != reduction.shape or node.op not in ir.POINTWISE_OPS:
                raise cannot_lower(f"{node.op} (after {reduction.op}, other than pointwise on its result's shape)")
    if reduction.op in ir.REDUCE_OPS or reduction.op in ir.INDEX_OPS:
        for node in post:
            if any(arg in pre_names for arg in node.value_args):
                raise cannot_lower(f"{node.op} (mixing values from before and after a reduction)")
            if node.shape != reduction.shape and node.shape != ():
                raise cannot_lower(f"{node.op} (a reduction's result broadcast back to a larger shape)")
    if pre and output in pre_names:
        raise cannot_lower("a forward whose output does not depend on its reduction", op=False)
