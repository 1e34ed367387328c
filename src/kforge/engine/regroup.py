"""Graph rewrites before partitioning: the same values, in a form that falls into fewer or better-shaped kernels.

Capture writes a forward as it reads; some of its forms cost kernels or parallelism that the same algebra,
written another way, does not. Each rule is a function `Program -> Program | None` (None: it does not apply)
whose docstring gives the algebra it relies on; `regroup` applies them until none does, before the partitioner
cuts the graph, and records one note per rewrite. Like `simplify`'s, the rules rely only on static dims and
change nothing beyond floating-point rounding (a long sum added up in another order):

- `split_long_reduction`: a reduction of a few long rows (`(x * y).sum()`) as two, the first over many short
  rows, so that many programs share it instead of one walking a million elements;
- `hoist_view`: a reshape of pointwise work on inputs as the same work on reshaped inputs, so that the work
  joins the kernel reading its result (a reshape of a computed value is a step between kernels);
- `sink_view`: a unary op on a reshape of a computed value as the reshape of that op, so that it joins the
  kernel computing the value;
- `commute_monotone`: a max pool or a running max of a non-decreasing function of an input as that function of
  the pool, so that the function is the pool kernel's epilogue, on fewer elements, not a kernel before it.
"""

from __future__ import annotations

import math

from kforge.engine import ir
from kforge.engine.simplify import Rule, rewrite_until_fixed

# A reduction is split when its rows are at least this long and too few to fill a GPU: its input is viewed with
# the reduced dim as (rows, PART) for the first PART in `_PARTS` dividing it that gives `_ROWS` rows in all (else
# the smallest that divides it).
_LONG = 8192
_PARTS = (4096, 2048, 1024, 512)
_ROWS = 128
_SPLITTABLE = ("sum", "mean", "amax", "amin", "logsumexp")

# Non-decreasing on all of their domain, the reals (NaN in, NaN out): f(max S) = max f(S).
_MONOTONE_UNARY = ("relu", "sigmoid", "tanh", "exp", "erf", "hardsigmoid", "clamp")
_MAX_LIKE = ("max_pool", "cummax")


def regroup(program: ir.Program) -> ir.Program:
    """`program` with every rule applied until none applies."""
    return rewrite_until_fixed(program, RULES, rounds=200)


# ---- helpers ------------------------------------------------------------------------------------------------


def _nodes_by_name(program: ir.Program) -> dict[str, ir.Node]:
    return {node.name: node for node in program.nodes}


def _only_user(program: ir.Program, name: str, user: ir.Node) -> bool:
    users = program.users(name)
    return name not in program.outputs and len(users) == 1 and users[0] is user


def _roots(program: ir.Program) -> set[str]:
    return {spec.name for spec in (*program.inputs, *program.params)}


def _rooted(program: ir.Program, name: str) -> bool:
    """Whether `name` is an input or a parameter, or a chain of views of one (read in place by a kernel)."""
    nodes, roots = _nodes_by_name(program), _roots(program)
    while name in nodes and nodes[name].op in ir.VIEW_OPS:
        name = str(nodes[name].args[0])
    return name in roots


def _static_of(spec: ir.TensorSpec | ir.Node) -> tuple[bool, ...]:
    return tuple(spec.is_static(d) for d in range(len(spec.shape)))


def _rebuilt(program: ir.Program, drop: set[str], at: str, inserted: list[ir.Node], note: str) -> ir.Program:
    """The program with the nodes named in `drop` removed and `inserted` placed where node `at` was."""
    nodes: list[ir.Node] = []
    for node in program.nodes:
        if node.name == at:
            nodes.extend(inserted)
        elif node.name not in drop:
            nodes.append(node)
    return program.replace(nodes=tuple(nodes), notes=(*program.notes, note))


def _with(node: ir.Node, name: str | None = None, args: tuple[ir.Arg, ...] | None = None,
          shape: ir.Shape | None = None, static: tuple[bool, ...] | None = None) -> ir.Node:
    return ir.Node(name or node.name, node.op, node.args if args is None else args,
                   node.shape if shape is None else shape, node.dtype, node.attrs,
                   node.static if static is None else static)


# ---- the rules ----------------------------------------------------------------------------------------------


def split_long_reduction(program: ir.Program) -> ir.Program | None:
    """A reduction over a long dim of a few rows is two: over parts of the dim, then over the parts.

    With the dim's R = P * Q elements viewed as (P, Q) (a reshape: the same elements in the same order),
    sum = sum over P of sums over Q; likewise max, min; mean = mean of the P means of Q elements each (equal
    sizes); logsumexp = logsumexp of the P logsumexps. The first reduction has P times as many rows, so as many
    programs share it. float32 only: a half-precision partial would be rounded where the one reduction is not.
    """
    for node in program.nodes:
        if node.op not in _SPLITTABLE or node.dtype != "float32" or not isinstance(node.args[0], str):
            continue
        source = program.spec(node.args[0])
        dim, shape = int(node.attr("dim")), source.shape
        length = shape[dim]
        static = _static_of(source)
        if length < _LONG or not static[dim] or sum(not s for s in static) > 1:
            continue
        rows = math.prod(shape) // length
        if rows >= _ROWS:
            continue
        dividing = [p for p in _PARTS if length % p == 0]
        if not dividing:
            continue
        part = next((p for p in dividing if rows * (length // p) >= _ROWS), dividing[-1])
        split_shape = (*shape[:dim], length // part, part, *shape[dim + 1:])
        split_static = (*static[:dim], True, True, *static[dim + 1:])
        view = ir.Node(f"{node.name}_split", "view", (node.args[0],), split_shape, source.dtype,
                       ir.make_attrs(shape=split_shape), split_static)
        first_shape = (*split_shape[:dim + 1], 1, *split_shape[dim + 2:])
        first = ir.Node(f"{node.name}_parts", node.op, (view.name,), first_shape, node.dtype,
                        ir.make_attrs(dim=dim + 1, keepdim=True),
                        (*split_static[:dim + 1], True, *split_static[dim + 2:]))
        second_shape = (*first_shape[:dim], 1, *first_shape[dim + 1:])
        second = ir.Node(f"{node.name}_whole", node.op, (first.name,), second_shape, node.dtype,
                         ir.make_attrs(dim=dim, keepdim=True), (*first.static[:dim], True, *first.static[dim + 1:]))
        result = ir.Node(node.name, "view", (second.name,), node.shape, node.dtype, ir.make_attrs(shape=node.shape),
                         node.static)
        note = f"{node.op} over {length} elements ({node.name}) split into {length // part} parts of {part}"
        return _rebuilt(program, set(), node.name, [view, first, second, result], note)
    return None


def _hoistable(program: ir.Program, name: str, shape: ir.Shape, members: list[ir.Node]) -> bool:
    """Whether the value `name` (of `shape`) is pointwise work, each step used once, on inputs and parameters of
    that same shape (or constants); its steps are collected in `members`."""
    if _rooted(program, name):
        return program.shape(name) == shape
    nodes = _nodes_by_name(program)
    node = nodes.get(name)
    if node in members:  # an operand read twice (x * x)
        return True
    if node is None or node.op not in ir.POINTWISE_OPS or node.shape != shape:
        return False
    for arg in node.value_args:
        if arg in nodes and not _only_user(program, arg, node):
            return False
        if not _hoistable(program, arg, shape, members):
            return False
    members.append(node)
    return True


def hoist_view(program: ir.Program) -> ir.Program | None:
    """A reshape of pointwise work is the same work on reshaped operands.

    For f pointwise and operands a, b of f's shape (constants aside), reshape(f(a, b)) = f(reshape(a),
    reshape(b)): reshaping keeps the elements and their order, and f works element by element. Done where the
    operands are inputs or parameters (or views of them), which a kernel reads in place, and each step of the
    work has no other user: the reshape of a computed value, a step of its own between kernels, is gone.
    """
    nodes = _nodes_by_name(program)
    for view in program.nodes:
        if view.op != "view" or not isinstance(view.args[0], str) or view.args[0] not in nodes:
            continue
        top = nodes[view.args[0]]
        members: list[ir.Node] = []
        if top.op not in ir.POINTWISE_OPS or not _only_user(program, top.name, view) or \
                not _hoistable(program, top.name, top.shape, members):
            continue
        leaves: dict[str, ir.Node] = {}
        for member in members:
            for arg in member.value_args:
                if arg not in nodes or nodes[arg].op in ir.VIEW_OPS:
                    spec = program.spec(arg)
                    leaves.setdefault(arg, ir.Node(f"{arg}_as_{view.name}".replace(".", "_"), "view", (arg,),
                                                   view.shape, spec.dtype, view.attrs, view.static))
        renamed = {member.name: member.name for member in members}
        renamed[top.name] = view.name
        rewritten = [_with(member, name=renamed[member.name], shape=view.shape, static=view.static,
                           args=tuple(leaves[a].name if isinstance(a, str) and a in leaves else
                                      renamed.get(a, a) if isinstance(a, str) else a for a in member.args))
                     for member in members]
        note = f"reshape {view.name} moved before the pointwise work it reshaped ({', '.join(renamed)})"
        return _rebuilt(program, set(renamed), view.name, [*leaves.values(), *rewritten], note)
    return None


def _reshaped_kernel_value(program: ir.Program, view: ir.Node) -> bool:
    """Whether `view` is a chain of reshapes, each used once, of a value a fused kernel computes and uses
    nowhere else (so that work after it can join that kernel)."""
    nodes = _nodes_by_name(program)
    user, name = view, str(view.args[0])
    while name in nodes and nodes[name].op == "view":
        if not _only_user(program, name, user):
            return False
        user, name = nodes[name], str(nodes[name].args[0])
    base = nodes.get(name)
    return base is not None and base.op not in ir.VIEW_OPS and base.op not in ir.STANDALONE_OPS and \
        base.op not in ir.COPY_OPS and _only_user(program, name, user)


def sink_view(program: ir.Program) -> ir.Program | None:
    """A unary op on a reshape of a computed value is the reshape of that op's result.

    For f pointwise with one tensor operand (constants aside), f(reshape(v)) = reshape(f(v)). Done where the
    reshape is a step between kernels (of a computed value) used by f alone, and v is the result of a fused
    kernel (a reduction, a GEMM, pointwise work) used nowhere else: f then joins the kernel computing v.
    """
    nodes = _nodes_by_name(program)
    for node in program.nodes:
        if node.op not in ir.POINTWISE_OPS or len(node.value_args) != 1:
            continue
        view = nodes.get(node.value_args[0])
        if view is None or view.op != "view" or not _only_user(program, view.name, node) or \
                program.shape(view.name) != node.shape or not _reshaped_kernel_value(program, view):
            continue
        source = program.spec(str(view.args[0]))
        inner = ir.Node(f"{node.name}_unviewed", node.op, tuple(str(view.args[0]) if a == view.name else a
                                                                 for a in node.args),
                        source.shape, node.dtype, node.attrs, _static_of(source))
        outer = ir.Node(node.name, "view", (inner.name,), node.shape, node.dtype, view.attrs, node.static)
        note = f"{node.op} {node.name} moved before the reshape {view.name}"
        return _rebuilt(program, {view.name}, node.name, [inner, outer], note)
    return None


def _non_decreasing(node: ir.Node) -> bool:
    """Whether `node` is a non-decreasing function of its one tensor operand, defined on all the reals."""
    if len(node.value_args) != 1 or node.dtype not in ("float32", "float16", "bfloat16"):
        return False
    if node.op in _MONOTONE_UNARY:
        return True
    if node.op == "leaky_relu":
        return float(node.attr("negative_slope", 0.01)) >= 0
    if node.op == "elu":
        return float(node.attr("alpha", 1.0)) >= 0
    if node.op == "softplus":
        return float(node.attr("beta", 1.0)) > 0
    constants = [float(a) for a in node.args if not isinstance(a, str)]
    if node.op in ("maximum", "minimum", "add"):  # with a constant: x + c, max(x, c)
        return True
    if node.op == "sub":  # x - c, not c - x
        return isinstance(node.args[0], str)
    if node.op == "mul":
        return constants[0] > 0
    if node.op == "div":  # x / c with c > 0, not c / x
        return isinstance(node.args[0], str) and constants[0] > 0
    return False


def commute_monotone(program: ir.Program) -> ir.Program | None:
    """A max pool (or running max) of a non-decreasing function of an input is that function of the pool.

    For f non-decreasing, max over a window of f(x) is f(max over the window of x) (and NaN stays NaN); a
    pool's padding is left out of its windows, not filled with a value. Done where f reads an input or a
    parameter and is used by the pool alone: f then runs on the pooled result, as the pool kernel's epilogue,
    instead of being a kernel before it.
    """
    nodes = _nodes_by_name(program)
    for pool in program.nodes:
        if pool.op not in _MAX_LIKE or not isinstance(pool.args[0], str):
            continue
        inner = nodes.get(pool.args[0])
        if inner is None or not _non_decreasing(inner) or not _only_user(program, inner.name, pool) or \
                not _rooted(program, inner.value_args[0]) or \
                program.spec(inner.value_args[0]).dtype != inner.dtype:
            continue
        source = inner.value_args[0]
        moved = _with(pool, name=f"{pool.name}_of_{source}".replace(".", "_"), args=(source,))
        applied = _with(inner, name=pool.name, shape=pool.shape, static=pool.static,
                        args=tuple(moved.name if a == source else a for a in inner.args))
        note = f"{inner.op} {inner.name} applied after {pool.op} {pool.name} (non-decreasing)"
        return _rebuilt(program, {inner.name}, pool.name, [moved, applied], note)
    return None


RULES: tuple[Rule, ...] = (split_long_reduction, hoist_view, sink_view, commute_monotone)
