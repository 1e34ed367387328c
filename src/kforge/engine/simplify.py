"""Shape-aware algebraic simplification of an `ir.Program`.

Each rule is a function `Program -> Program | None` (None: it does not apply) whose docstring gives the
algebra it relies on; `simplify` applies them until none does, then drops dead nodes, and records one note
per rewrite in `Program.notes`. Rules rely only on dims that are static (the same size in every input set of
the problem), and never change what the reference computes beyond floating-point rounding: randomness (dropout
in training mode) is never lowered by capture, and hidden state is explicit (a training-mode batch norm's new
running statistics are outputs, `ir.Program.updates`), so no rule sees either. Each rule is tested on random
inputs against `ir.evaluate` in tests/engine/test_simplify.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kforge.engine import ir

Rule = Callable[[ir.Program], "ir.Program | None"]


def simplify(program: ir.Program) -> ir.Program:
    """`program` with every rule applied until none applies, and dead nodes removed."""
    return rewrite_until_fixed(program, RULES, rounds=100)


def rewrite_until_fixed(program: ir.Program, rules: Sequence[Rule], rounds: int) -> ir.Program:
    """`program` rewritten by the first of `rules` that applies, dead nodes removed, until none applies (at most
    `rounds` rewrites)."""
    for _ in range(rounds):
        for rule in rules:
            rewritten = rule(program)
            if rewritten is not None:
                program = remove_dead(rewritten)
                break
        else:
            return program
    return program


def remove_dead(program: ir.Program) -> ir.Program:
    """Drop epilogue and prepared nodes that no output depends on."""
    needed = set(program.outputs)
    if program.heavy is not None:
        needed.update(program.heavy.value_args)
    for node in reversed((*program.prepared, *program.all_nodes())):
        if node.name in needed:
            needed.update(node.value_args)
    heavy = program.heavy if program.heavy is not None and program.heavy.name in needed else None
    if heavy is None and program.heavy is not None:
        needed.discard(program.heavy.name)
    return program.replace(heavy=heavy, nodes=tuple(n for n in program.nodes if n.name in needed),
                           prepared=tuple(n for n in program.prepared if n.name in needed))


# ---- helpers ----------------------------------------------------------------------------------------------


def _substitute(program: ir.Program, old: str, new: ir.Arg, note: str, drop: str | None = None,
                **changes: object) -> ir.Program:
    """Every use of value `old` replaced by `new` (outputs included); node `drop` removed."""
    def fix(node: ir.Node) -> ir.Node:
        args = tuple(new if arg == old else arg for arg in node.args)
        return node if args == node.args else ir.Node(node.name, node.op, args, node.shape, node.dtype,
                                                       node.attrs, node.static)

    nodes = tuple(fix(n) for n in program.nodes if n.name != drop)
    outputs = program.outputs
    if old in outputs:
        if not isinstance(new, str):
            return program  # a float cannot be returned; the caller's rule does not apply
        outputs = tuple(new if name == old else name for name in outputs)
    fields: dict[str, object] = {"nodes": nodes, "outputs": outputs, "notes": (*program.notes, note)}
    fields.update(changes)
    return program.replace(**fields)


def _replace_node(program: ir.Program, node: ir.Node, replacement: tuple[ir.Node, ...], note: str,
                  **changes: object) -> ir.Program:
    index = program.nodes.index(node)
    nodes = program.nodes[:index] + replacement + program.nodes[index + 1:]
    fields: dict[str, object] = {"nodes": nodes, "notes": (*program.notes, note)}
    fields.update(changes)
    return program.replace(**fields)


def _single_user(program: ir.Program, name: str) -> bool:
    return len(program.users(name)) == 1 and name not in program.outputs


def _constant(node: ir.Node, source: str, value: float, reason: str) -> ir.Node:
    """A node equal to `value` everywhere (NaN where `source` is NaN), of `node`'s shape."""
    return ir.Node(node.name, "clamp", (source,), node.shape, node.dtype, ir.make_attrs(min=value, max=value),
                   node.static)


# ---- the rules ----------------------------------------------------------------------------------------------


def size_one_reduction(program: ir.Program) -> ir.Program | None:
    """A reduction over a dim of static size 1 is the identity on its single element.

    sum_{i<1} x_i = mean_{i<1} x_i = max_{i<1} x_i = min_{i<1} x_i = x_0, and logsumexp = log(exp(x_0)) = x_0.
    With keepdim the result is the input itself (not where the result is an output: a composed forward reads a
    kernel's value by its name); without it, a view of the input dropping that dim (done only when the input is a
    leaf, since the backends view leaves, not computed values).
    """
    leaves = {s.name for s in (*program.inputs, *program.params)} | ({program.heavy.name} if program.heavy else set())
    for node in program.nodes:
        if node.op not in ir.REDUCE_OPS or not isinstance(node.args[0], str):
            continue
        source = program.spec(node.args[0])
        dim = node.attr("dim")
        if source.shape[dim] != 1 or not source.is_static(dim):
            continue
        note = f"{node.op} over dim {dim} of size 1 is the identity ({node.name})"
        if node.attr("keepdim"):
            if node.name in program.outputs:  # kept: a composed forward reads the kernel's value by this name
                continue
            return _substitute(program, node.name, node.args[0], note, drop=node.name)
        if node.args[0] in leaves:
            view = ir.Node(node.name, "view", (node.args[0],), node.shape, node.dtype,
                           ir.make_attrs(shape=node.shape), node.static)
            return _replace_node(program, node, (view,), note)
    return None


def sum_of_linear(program: ir.Program) -> ir.Program | None:
    """A sum (or mean) over the output features of a linear layer is one matrix-vector product.

    sum_j (x . W_j + b_j) = x . (sum_j W_j) + sum_j b_j, so linear(x, W, b).sum(-1) = linear(x, w, c) with
    w = W.sum(0) (one row) and c = b.sum(); for the mean, divide both by the number of rows of W. The reduced
    weights are `prepared` values, computed once at construction; the GEMM becomes a GEMV (M = 1).
    """
    heavy = program.heavy
    if heavy is None or heavy.op != "linear" or len(program.users(heavy.name)) != 1 or heavy.name in program.outputs:
        return None
    node = program.users(heavy.name)[0]
    last = len(heavy.shape) - 1
    if node.op not in ("sum", "mean") or node.attr("dim") != last:
        return None
    weight = str(heavy.args[1])
    if weight not in {p.name for p in program.params}:
        return None
    prepared = [ir.Node(f"{weight}.{node.op}_rows", node.op, (weight,), (1, program.shape(weight)[1]),
                        attrs=ir.make_attrs(dim=0, keepdim=True))]
    args: tuple[ir.Arg, ...] = (heavy.args[0], prepared[0].name)
    if len(heavy.args) > 2:
        bias = str(heavy.args[2])
        prepared.append(ir.Node(f"{bias}.{node.op}", node.op, (bias,), (1,), attrs=ir.make_attrs(dim=0, keepdim=True)))
        args += (prepared[1].name,)
    shape = (*heavy.shape[:-1], 1)
    gemv = ir.Node(heavy.name, "linear", args, shape, heavy.dtype, (), (*heavy.static[:-1], True) if heavy.static
                   else ())
    note = f"{node.op} over the features of linear {heavy.name} -> one matrix-vector product with reduced weights"
    fields = {"heavy": gemv, "prepared": (*program.prepared, *prepared)}
    if node.attr("keepdim"):
        return _substitute(program, node.name, heavy.name, note, drop=node.name, **fields)
    view = ir.Node(node.name, "view", (heavy.name,), node.shape, node.dtype, ir.make_attrs(shape=node.shape),
                   node.static)
    return _replace_node(program, node, (view,), note, **fields)


_AFFINE_OPS = ("mul", "div", "add", "sub", "neg")


def _affine(node: ir.Node) -> tuple[str, float, float] | None:
    """(x, s, t) when node computes s * x + t for a value x and constants s, t."""
    if node.op == "neg" and isinstance(node.args[0], str):
        return node.args[0], -1.0, 0.0
    if node.op not in _AFFINE_OPS or len(node.args) != 2:
        return None
    a, b = node.args
    if isinstance(a, str) and not isinstance(b, str):
        c = float(b)
        return {"mul": (a, c, 0.0), "div": (a, 1.0 / c, 0.0) if c != 0 else None, "add": (a, 1.0, c),
                "sub": (a, 1.0, -c)}[node.op]
    if isinstance(b, str) and not isinstance(a, str):
        c = float(a)
        return {"mul": (b, c, 0.0), "add": (b, 1.0, c), "sub": (b, -1.0, c), "div": None}[node.op]
    return None


def fold_scalar_chain(program: ir.Program) -> ir.Program | None:
    """Chains of multiplications, divisions, additions and subtractions by constants fold into one multiply-add.

    Each step is affine, y = s x + t; composing two, s2 (s1 x + t1) + t2 = (s2 s1) x + (s2 t1 + t2). A chain of
    two or more steps (each intermediate used once) becomes `x * s` then `+ t` (a step whose constant is the
    identity, s = 1 or t = 0, is left out). Division by c becomes multiplication by 1/c: the two differ by
    at most one rounding.
    """
    for node in program.nodes:
        outer = _affine(node)
        if outer is None or node.dtype == "float64":
            continue
        base, s, t = outer
        steps = 1
        while True:
            inner_node = next((n for n in program.nodes if n.name == base), None)
            inner = _affine(inner_node) if inner_node is not None and _single_user(program, base) else None
            if inner is None:
                break
            base, s, t = inner[0], s * inner[1], s * inner[2] + t
            steps += 1
        replacement: list[ir.Node] = []
        current: ir.Arg = base
        if s != 1.0 or t == 0.0:
            name = node.name if t == 0.0 else f"{node.name}_scaled"
            replacement.append(ir.Node(name, "mul", (current, s), node.shape, node.dtype, (), node.static))
            current = name
        if t != 0.0:
            replacement.append(ir.Node(node.name, "add", (current, t), node.shape, node.dtype, (), node.static))
        if len(replacement) >= steps:
            continue  # already as short as it gets
        return _replace_node(program, node, tuple(replacement), f"{steps} constant multiply/add steps folded into "
                             f"x * {s:.6g} + {t:.6g} ({node.name})")
    return None


def _bounds(node: ir.Node) -> tuple[str, float | None, float | None] | None:
    """(x, lo, hi) when node clamps value x to [lo, hi] (relu, scalar maximum/minimum and clamp included)."""
    if node.op == "clamp" and isinstance(node.args[0], str):
        return node.args[0], node.attr("min"), node.attr("max")
    if node.op == "relu":
        return str(node.args[0]), 0.0, None
    if node.op in ("maximum", "minimum") and len(node.args) == 2:
        values = [a for a in node.args if isinstance(a, str)]
        constants = [float(a) for a in node.args if not isinstance(a, str)]
        if len(values) == 1 and len(constants) == 1:
            return (values[0], constants[0], None) if node.op == "maximum" else (values[0], None, constants[0])
    return None


def merge_clamps(program: ir.Program) -> ir.Program | None:
    """Back-to-back clamps (relu, max/min with a constant) merge into one.

    clamp(clamp(x, a1, b1), a2, b2) = clamp(x, max(a1, a2), min(b1, b2)) when the merged interval is not
    empty: for x below both lower bounds both sides give max(a1, a2), above both upper bounds min(b1, b2),
    and in between x. When the intervals do not meet the result is the constant of the outer clamp's side
    (left to `constant_results`, which needs no interval logic: the rule does not apply then).
    """
    for node in program.nodes:
        outer = _bounds(node)
        if outer is None:
            continue
        inner_node = next((n for n in program.nodes if n.name == outer[0]), None)
        if inner_node is None or not _single_user(program, inner_node.name):
            continue
        inner = _bounds(inner_node)
        if inner is None:
            continue
        lows = [v for v in (inner[1], outer[1]) if v is not None]
        highs = [v for v in (inner[2], outer[2]) if v is not None]
        low, high = (max(lows) if lows else None), (min(highs) if highs else None)
        if low is not None and high is not None and low > high:
            continue
        merged = ir.Node(node.name, "clamp", (inner[0],), node.shape, node.dtype, ir.make_attrs(min=low, max=high),
                         node.static)
        return _replace_node(program, node, (merged,), f"clamps {inner_node.name} and {node.name} merged into "
                             f"clamp({low}, {high})")
    return None


def constant_results(program: ir.Program) -> ir.Program | None:
    """Operations whose result does not depend on their input's values become constants (degenerate problem).

    softmax over a dim of static size 1 is exp(x - x) / exp(x - x) = 1; log_softmax there is 0; x - x = 0;
    clamp(x, a, b) with a >= b is b everywhere (torch's rule for an empty interval). The constant is written
    clamp(x, c, c), which keeps x's shape (and NaN where x is NaN); the program is flagged degenerate, since
    the problem's output then carries no information from that input.
    """
    for node in program.nodes:
        source = node.args[0] if node.args and isinstance(node.args[0], str) else None
        if source is None:
            continue
        value: float | None = None
        why = ""
        if node.op in ("softmax", "log_softmax"):
            dim = node.attr("dim")
            spec = program.spec(source)
            if spec.shape[dim] == 1 and spec.is_static(dim):
                value, why = (1.0 if node.op == "softmax" else 0.0), f"{node.op} over a dim of size 1"
        elif node.op == "sub" and node.args[0] == node.args[1]:
            value, why = 0.0, "x - x"
        elif node.op == "clamp" and node.attr("min") is not None and node.attr("max") is not None \
                and node.attr("min") >= node.attr("max") and node.attr("min") != node.attr("max"):
            value, why = float(node.attr("max")), "a clamp to an empty interval"
        if value is None or node.dtype == "float64":
            continue
        if program.spec(source).shape != node.shape:
            continue
        constant = _constant(node, source, value, why)
        reason = f"{node.name} is always {value:g} ({why})"
        return _replace_node(program, node, (constant,), f"constant: {reason}",
                             degenerate="; ".join(r for r in (program.degenerate, reason) if r))
    return None


RULES: tuple[Rule, ...] = (constant_results, size_one_reduction, sum_of_linear, fold_scalar_chain, merge_clamps)
