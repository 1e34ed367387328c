"""The C++ backend: an `ir.Program` rendered as a standalone `load_inline` solution for the CPU.

One generated file holds: the heavy op (a blocked GEMM or a direct convolution of our own, or the vendor's
`at::linear`/`at::mm`/`at::bmm`/`at::conv*` when the harness policy allows vendor GEMM), then one fused
epilogue kernel (OpenMP over rows, `#pragma omp simd` inner loops, the expression inlined) that reads every
operand through broadcast strides and writes the output once. The C++ is assembled from the Jinja2 templates
in `kforge/data/engine/cpp/`; op spellings are in `ops.toml` there. Tunables (tile and block sizes, the
OpenMP chunk) are template parameters: `variants()` returns several configurations for the tuner.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2

from kforge.engine import dtypes, ir
from kforge.engine.capture import LoweringError, cannot_lower
from kforge.engine.construct import REFERENCE_CLASS, param_expression, reference_source
from kforge.engine.expressions import python_expression
from kforge.engine.lower import Leaf, Plan, plan
from kforge.templating import template_environment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

DEFAULT_CONFIG: dict[str, int] = {"block_n": 64, "block_m": 48, "cols": 4096, "chunk": 8}
# Values each tunable may take; variants() walks them from the default outwards.
SPACE: dict[str, tuple[int, ...]] = {"block_n": (64, 256), "block_m": (48, 96), "cols": (4096, 512),
                                     "chunk": (8, 1)}


def _templates() -> jinja2.Environment:
    return template_environment("kforge", "data/engine/cpp")


@lru_cache(maxsize=1)
def op_table() -> dict[str, Any]:
    return tomllib.loads(resources.files("kforge").joinpath("data/engine/cpp/ops.toml").read_text())


def literal(value: float) -> str:
    """A float as a C++ float literal."""
    value = float(value)
    if math.isnan(value):
        return "std::numeric_limits<float>::quiet_NaN()"
    if math.isinf(value):
        return ("" if value > 0 else "-") + "std::numeric_limits<float>::infinity()"
    text = repr(value)
    return text + ("f" if "e" in text or "." in text else ".0f")


# The C++ type a kernel stores (and, but for bool, holds) each dtype in, and its ATen scalar type.
CTYPES = {"float32": "float", "int64": "int64_t", "int32": "int32_t", "bool": "bool"}
SCALAR_TYPES = {"float32": "torch::kFloat32", "int64": "torch::kInt64", "int32": "torch::kInt32",
                "bool": "torch::kBool"}


def typed_literal(value: float, dtype: str) -> str:
    """A constant as a C++ literal of the held dtype `dtype`."""
    if dtypes.is_integer(dtype) and float(value).is_integer():
        return f"{CTYPES[dtype]}{{{int(value)}}}"
    return literal(value) if dtype == dtypes.FLOAT else f"static_cast<{CTYPES[dtype]}>({literal(value)})"


def cpp_expression(node: ir.Node, operands: list[str], dtype: str = dtypes.FLOAT) -> str:
    """The C++ expression of a pointwise node, given its operands' C++ expressions (already of the dtype the
    node computes in, `dtype`: see kforge.engine.dtypes)."""
    table = op_table()
    if node.op == "cast" and node.dtype == "bool":
        return f"({operands[0]} != 0 ? 1.0f : 0.0f)"
    if dtypes.is_integer(dtype) and node.op in ("abs", "relu", "remainder"):
        zero = f"{CTYPES[dtype]}{{0}}"
        return {"abs": f"std::abs({operands[0]})", "relu": f"std::max({operands[0]}, {zero})",
                "remainder": f"remainder_int({', '.join(operands)})"}[node.op]
    if node.op == "clamp":
        value = operands[0]
        if node.attr("min") is not None:
            value = f"std::max({value}, {typed_literal(node.attr('min'), dtype)})"
        if node.attr("max") is not None:
            value = f"std::min({value}, {typed_literal(node.attr('max'), dtype)})"
        return value
    if node.op == "pow" and not isinstance(node.args[1], str):
        exponent = float(node.args[1])
        if exponent == 0.5:
            return f"std::sqrt({operands[0]})"
        if exponent.is_integer() and 1 <= exponent <= 4:
            return "(" + " * ".join([operands[0]] * int(exponent)) + ")"
    if node.op in table["unary"]:
        attrs = {**table["defaults"], **{k: v for k, v in node.attrs if isinstance(v, (int, float))}}
        return str(table["unary"][node.op].format(*operands, **{k: literal(v) for k, v in attrs.items()}))
    if node.op in table["binary"]:
        return str(table["binary"][node.op].format(*operands))
    if node.op in table["ternary"]:
        return str(table["ternary"][node.op].format(*operands))
    raise cannot_lower(node.op)


def identifier(name: str) -> str:
    return re.sub(r"\W", "_", name)


@dataclass(frozen=True)
class _Operand:
    """One entry of the kernel's operand array: a leaf seen in the iteration space or the reduced space."""

    leaf: Leaf
    reduced: bool  # read in the output's space (after a reduction) rather than the iteration space
    broadcast: bool  # constant along the vectorized dims


class _Renderer:
    def __init__(self, lowered: Plan, problem_source: str, config: Mapping[str, Any], vendor: bool) -> None:
        self.plan = lowered
        self.program = lowered.program
        self.problem_source = problem_source
        self.config = {**DEFAULT_CONFIG, **config}
        self.vendor = vendor
        red = lowered.reduction
        self.rank = len(lowered.iter_shape)
        self.mode = "map" if red is None else ("row" if red.attr("dim") == self.rank - 1 else "col")
        self.dim = red.attr("dim") if red is not None else self.rank - 1
        self.operands = self._operands()

    # ---- names --------------------------------------------------------------------------------------------
    def root_var(self, name: str) -> str:
        """The C++ variable of an input, param or prepared value (prefixed: never a local of the wrapper)."""
        if self.program.heavy is not None and name == self.program.heavy.name:
            return "heavy"
        if any(spec.name == name for spec in self.program.inputs):
            return f"in_{identifier(name)}"
        return f"param_{identifier(name)}"

    def leaf_var(self, leaf: Leaf) -> str:
        return f"t_{identifier(leaf.name)}" if leaf.views else self.root_var(leaf.root)

    # ---- operands and their loads ---------------------------------------------------------------------------
    def _vector_dims(self) -> range:
        return range(self.dim + 1, self.rank) if self.mode == "col" else range(self.rank - 1, self.rank)

    def _broadcast(self, leaf: Leaf, reduced: bool) -> bool:
        red = self.plan.reduction
        space_rank = self.rank
        shape, static = list(leaf.shape), list(leaf.static or (True,) * len(leaf.shape))
        if reduced and red is not None and not red.attr("keepdim"):
            # Align to the output's rank first, then insert the reduced dim (as the kernel's view does).
            pad = (space_rank - 1) - len(shape)
            shape, static = [1] * pad + shape, [True] * pad + static
            shape.insert(self.dim, 1)
            static.insert(self.dim, True)
        pad = space_rank - len(shape)
        shape, static = [1] * pad + shape, [True] * pad + static
        return all(shape[d] == 1 and static[d] for d in self._vector_dims())

    def _operands(self) -> list[_Operand]:
        lowered = self.plan
        red = lowered.reduction
        iter_nodes = list(lowered.pre)
        post_reduced: list[ir.Node] = []
        if red is not None:
            iter_nodes.append(red)
            if red.op in ir.ROW_OPS:
                iter_nodes.extend(lowered.post)
            else:
                post_reduced.extend(lowered.post)
        result: list[_Operand] = []
        for nodes, reduced in ((iter_nodes, False), (post_reduced, True)):
            for leaf in lowered.leaves_of(tuple(nodes)):
                result.append(_Operand(leaf, reduced, self._broadcast(leaf, reduced)))
        if not result and lowered.leaves:
            leaf = lowered.leaves[0]
            result.append(_Operand(leaf, False, self._broadcast(leaf, False)))
        return result

    def load(self, leaf_name: str, reduced: bool) -> str:
        index = next(i for i, op in enumerate(self.operands) if op.leaf.name == leaf_name and op.reduced == reduced)
        broadcast = self.operands[index].broadcast
        if self.mode == "map":
            return f"p{index}[0]" if broadcast else f"p{index}[j]"
        if self.mode == "row":
            return f"p{index}[0]" if broadcast or reduced else f"p{index}[r]"
        along = "" if reduced else f"r * sr{index}"
        inner = "" if broadcast else "c"
        return f"p{index}[{' + '.join(p for p in (along, inner) if p) or '0'}]"

    def _load(self, leaf_name: str, reduced: bool) -> str:
        """A leaf's element as the kernel holds it: a boolean as 1.0f/0.0f."""
        element = self.load(leaf_name, reduced)
        return f"static_cast<float>({element})" if self.program.spec(leaf_name).dtype == "bool" else element

    def held(self, name: str) -> str:
        """The dtype the kernel holds value `name` in (run-time scalars are floats)."""
        if name in self.plan.numbers or any(s.name == name for s in self.plan.scalars):
            return dtypes.FLOAT
        return dtypes.held(self.program.spec(name).dtype)

    def expression_of(self, arg: ir.Arg, reduced: bool, dtype: str = dtypes.FLOAT) -> str:
        """`arg` in C++, converted to the held dtype `dtype` where it is held in another."""
        if not isinstance(arg, str):
            return typed_literal(arg, dtype)
        if any(s.name == arg for s in self.plan.scalars) or arg in self.plan.numbers:
            expression = f"s_{identifier(arg)}"
        elif any(leaf.name == arg for leaf in self.plan.leaves):
            expression = self._load(arg, reduced)
        else:
            expression = f"v_{identifier(arg)}"
        return expression if self.held(arg) == dtype else f"static_cast<{CTYPES[dtype]}>({expression})"

    def lines(self, nodes: tuple[ir.Node, ...], reduced: bool) -> list[str]:
        result = []
        for n in nodes:
            wanted = dtypes.operand_dtypes(n, self.held)
            operands = [self.expression_of(a, reduced, d) for a, d in zip(n.args, wanted, strict=True)]
            result.append(f"const {CTYPES[dtypes.held(n.dtype)]} v_{identifier(n.name)} = "
                          f"{cpp_expression(n, operands, dtypes.node_dtype(n, self.held))};")
        return result

    # ---- the leaves' construction in the wrapper ----------------------------------------------------------
    def leaf_line(self, leaf: Leaf) -> str:
        expression = self.root_var(leaf.root)
        for view in leaf.views:
            if view.op == "view":
                found = ir.reshape_sizes(view)
                if found is None:
                    raise cannot_lower("view (with more than one varying dim)")
                sizes = [str(s) for s in found]
                expression += f".reshape({{{', '.join(sizes)}}})"
            elif view.op != "slice":
                raise cannot_lower(f"{view.op} (inside a kernel)")
            else:
                dim = view.attr("dim")
                start = int(view.attr("start", 0))
                if len(view.args) > 1:
                    stop = f"static_cast<int64_t>(s_{identifier(str(view.args[1]))})"
                elif view.attr("stop") is not None:
                    stop = str(int(view.attr("stop")))
                else:
                    stop = f"{expression}.size({dim})"
                expression = (f"{expression}.narrow({dim}, {start}, "
                              f"std::max<int64_t>(0, std::min<int64_t>({stop}, {expression}.size({dim})) - {start}))")
        return f"const torch::Tensor {self.leaf_var(leaf)} = {expression};"

    # ---- the whole file -------------------------------------------------------------------------------------
    def heavy_context(self) -> dict[str, Any] | None:
        heavy = self.program.heavy
        if heavy is None:
            return None
        args = [self.root_var(str(a)) for a in heavy.args]
        for arg in heavy.value_args:
            given: tuple[ir.TensorSpec | ir.Node, ...] = (*self.program.inputs, *self.program.params,
                                                          *self.program.prepared)
            if self.program.heavy is not None and arg not in {s.name for s in given}:
                raise cannot_lower(f"{heavy.op} (of a computed operand)")
        context: dict[str, Any] = {"kind": heavy.op, "a": args[0], "b": args[1],
                                   "bias": args[2] if len(args) > 2 else None, "nd": False}
        if heavy.op in (*ir.CONV_OPS, *ir.CONV_TRANSPOSE_OPS):
            transposed = heavy.op in ir.CONV_TRANSPOSE_OPS
            for key in ("stride", "padding", "dilation") + (("output_padding",) if transposed else ()):
                values = tuple(heavy.attr(key))
                context[f"{key}_list"] = values
                context[key] = "{" + ", ".join(str(v) for v in values) + "}"
                # Three spatial dims (conv_nd.cpp.j2): the missing leading ones of size 1.
                unit = 1 if key in ("stride", "dilation") else 0
                context[f"{key}3"] = "{" + ", ".join(str(v) for v in (unit,) * (3 - len(values)) + values) + "}"
            context["groups"] = int(heavy.attr("groups", 1))
            context.update(nd=heavy.op not in ("conv1d", "conv2d"), transposed=transposed,
                           spatial=len(heavy.attr("stride")))
        return context

    def render(self) -> str:
        lowered = self.plan
        program = self.program
        values: tuple[ir.TensorSpec | ir.Node, ...] = (*program.inputs, *program.params, *program.all_nodes())
        for value in values:
            # Booleans are held as 1.0f/0.0f, integers in their own width (kforge.engine.dtypes).
            if value.dtype not in CTYPES and value.shape != ():
                raise cannot_lower(f"the value {value.name} in {value.dtype} (the C++ backend computes in float32)",
                                   op=False)
        red = lowered.reduction
        if red is not None and red.op != "sum" and dtypes.is_integer(self.held(str(red.args[0]))):
            raise cannot_lower(f"{red.op} (of integers)")
        if program.heavy is not None and any(program.spec(a).dtype != "float32" for a in program.heavy.value_args):
            raise cannot_lower(f"{program.heavy.op} (of operands that are not float32)")
        epilogue = bool(lowered.pre or lowered.post or red)
        roots = [spec.name for spec in program.inputs] + [spec.name for spec in program.params] + \
            [node.name for node in program.prepared]
        used_roots = [name for name in roots if name in {leaf.root for leaf in lowered.leaves} or
                      (program.heavy is not None and name in program.heavy.value_args)]
        tensor_args = [self.root_var(name) for name in used_roots]
        scalar_args = [f"s_{identifier(name)}" for name in lowered.numbers] + \
            [f"s_{identifier(s.name)}" for s in lowered.scalars]
        leaves = [{"line": self.leaf_line(leaf)} for leaf in lowered.leaves if leaf.views]
        out_dtype = program.spec(lowered.output).dtype
        context: dict[str, Any] = {
            "heavy": self.heavy_context(), "vendor": self.vendor, "epilogue": epilogue, "rank": self.rank,
            "dim": self.dim, "mode": self.mode, "operands": len(self.operands), "outer": self._outer(),
            "block_n": self.config["block_n"], "block_m": self.config["block_m"],
            "cols": self.config["cols"] if self.mode == "map" else min(256, self.config["cols"] // 16),
            "chunk": self.config["chunk"], "scalars": scalar_args,
            "params": [f"torch::Tensor {name}" for name in tensor_args] + [f"double {s}" for s in scalar_args],
            "tensor_args": tensor_args, "leaves": leaves, "prepared": self._prepared(),
            "tensor_checks": [(self.root_var(name), SCALAR_TYPES[program.spec(name).dtype], program.spec(name).dtype)
                              for name in used_roots],
            "out_ctype": CTYPES[out_dtype], "out_scalar": SCALAR_TYPES[out_dtype],
            "reduce": red is not None and red.op in (*ir.REDUCE_OPS, *ir.INDEX_OPS),
            "keepdim": bool(red and red.attr("keepdim")),
            "summary": self._summary(), "flatten": self._flatten(tensor_args + scalar_args),
        }
        if epilogue:
            context.update(self._epilogue_context())
        else:
            output = lowered.leaf(lowered.output)
            context["result"] = self.leaf_var(output)
        cpp = _templates().get_template("module.cpp.j2").render(**context).strip()
        return self._solution(cpp, used_roots, scalar_args)

    def _flatten(self, call: list[str]) -> dict[str, Any] | None:
        """Accept one input of higher rank by flattening its leading dims, where that is sound: a single input
        whose first dim varies, an output of its rank, no reduction over dim 0 and no views."""
        program = self.program
        if len(program.inputs) != 1 or not program.inputs[0].shape or program.inputs[0].is_static(0):
            return None
        spec = program.inputs[0]
        red = self.plan.reduction
        if len(self.plan.out_shape) != len(spec.shape) or (red is not None and red.attr("dim") == 0) \
                or any(node.op in ir.VIEW_OPS for node in program.nodes):
            return None
        name = self.root_var(spec.name)
        return {"name": name, "rank": len(spec.shape), "plain": call,
                "call": [f"{arg}.flatten(0, extra)" if arg == name else arg for arg in call]}

    def _outer(self) -> int:
        return self.dim if self.mode == "col" else self.rank - 1

    def _epilogue_context(self) -> dict[str, Any]:
        lowered = self.plan
        red = lowered.reduction
        row_op = red is not None and red.op in ir.ROW_OPS
        context: dict[str, Any] = {"pre_lines": self.lines(lowered.pre, False),
                                   "post_lines": self.lines(lowered.post, red is not None and not row_op),
                                   "out_expr": self.expression_of(lowered.output, red is not None and not row_op,
                                                                  self.held(lowered.output)),
                                   "red": {"op": red.op} if red else {"op": ""}, "red_in": "", "red_var": "",
                                   "acc": "float", "red_ctype": "float",
                                   "eps": "0.0f", "ln_affine": "", "indent": "",
                                   "post_uses_pre": any(a in {n.name for n in lowered.pre}
                                                        for n in lowered.post for a in n.value_args)}
        if red is not None:
            # A sum of integers or booleans accumulates in int64 (torch's dtype for it); argmax/argmin compare floats.
            acc = dtypes.held(red.dtype) if red.op == "sum" else dtypes.FLOAT
            context["red_in"] = self.expression_of(red.args[0], False, acc)
            context["red_var"] = f"v_{identifier(red.name)}"
            context.update(acc=CTYPES[acc], red_ctype=CTYPES[dtypes.held(red.dtype)])
            if red.op == "layer_norm":
                context["eps"] = literal(red.attr("eps", 1e-5))
                extra = [self.expression_of(a, False) for a in red.args[1:]]
                context["ln_affine"] = "".join(f" {sign} {e}" for sign, e in zip(("*", "+"), extra, strict=False))
        iter_leaves = [self.leaf_var(op.leaf) for op in self.operands if not op.reduced]
        context["iter_leaves"] = iter_leaves or [self.leaf_var(self.operands[0].leaf)]
        reduced_shape = "reduced"
        operand_list = []
        for op in self.operands:
            tensor = self.leaf_var(op.leaf)
            if op.reduced:
                tensor = f"{tensor}.expand(out_shape)" + ("" if red and red.attr("keepdim") else
                                                           f".unsqueeze({self.dim})")
            first = self.dim + 1 if self.mode == "col" else self.rank - 1
            operand_list.append({"tensor": tensor, "shape": reduced_shape if op.reduced else "shape",
                                 "first": first, "broadcast": op.broadcast,
                                 "ctype": CTYPES[self.program.spec(op.leaf.name).dtype]})
        context["operand_list"] = operand_list
        return context

    def _prepared(self) -> list[dict[str, Any]]:
        result = []
        for index, node in enumerate(self.program.prepared):
            source = self.program.spec(str(node.args[0]))
            if node.op not in ("sum", "mean") or len(source.shape) not in (1, 2) or not node.attr("keepdim"):
                raise cannot_lower(f"{node.op} (prepared at construction)")
            rows, cols = (source.shape if len(source.shape) == 2 else (source.shape[0], 1))
            dim = node.attr("dim")
            count = rows if dim == 0 else cols
            scale = f" / {count}.0f" if node.op == "mean" else ""
            result.append({"function": f"prepare_{index}", "buffer": f"prepared_{index}", "dim": dim,
                           "scale": scale, "shape": ", ".join(str(n) for n in node.shape),
                           "source": f"{param_expression(source.name)}.reshape({rows}, {cols})",
                           "comment": f"{node.name} = {node.op} of {source.name} "
                           f"over dim {dim}, computed once here"})
        return result

    def _summary(self) -> str:
        lowered = self.plan
        parts = [n.op for n in lowered.pre] + ([lowered.reduction.op + f"(dim {self.dim})"]
                                               if lowered.reduction else []) + [n.op for n in lowered.post]
        return f"Fused epilogue ({self.mode} mode): " + (" -> ".join(parts) or "copy")

    def _solution(self, cpp: str, used_roots: list[str], scalar_args: list[str]) -> str:
        program = self.program
        inputs = [identifier(spec.name) for spec in program.inputs]
        call_args = []
        prepared_index = {n.name: i for i, n in enumerate(program.prepared)}
        for name in used_roots:
            if name in prepared_index:
                call_args.append(f"self.prepared_{prepared_index[name]}")
            elif any(spec.name == name for spec in program.params):
                call_args.append(param_expression(name))
            else:
                call_args.append(identifier(name))
        scalar_lines = [f"s_{identifier(name)} = float({identifier(name)})" for name in self.plan.numbers]
        for node in self.plan.scalars:
            if node.op == "size" and str(node.args[0]) not in {s.name for s in program.inputs}:
                raise cannot_lower("size (of a value that is not an input)")
            scalar_lines.append(f"s_{identifier(node.name)} = "
                                + python_expression(node, lambda a: identifier(a) if isinstance(a, str) and
                                                    not any(s.name == a for s in self.plan.scalars)
                                                    else (f"s_{identifier(a)}" if isinstance(a, str) else repr(a))))
        call_args.extend(scalar_args)
        prepared = self._prepared()
        digest = hashlib.sha256(cpp.encode()).hexdigest()[:12]
        return _templates().get_template("solution.py.j2").render(
            docstring=self._docstring(), cpp=cpp, extension=f"kforge_builtin_{digest}",
            functions=["forward", *[p["function"] for p in prepared]],
            reference=reference_source(self.problem_source).strip(), reference_class=REFERENCE_CLASS,
            prepared=prepared, inputs=inputs, scalar_lines=scalar_lines, call_args=call_args)

    def _docstring(self) -> str:
        lines = ["Generated by kforge's builtin engine (no LLM) for the CPU.", ""]
        heavy = self.program.heavy
        if heavy is not None:
            how = "the vendor library (ATen)" if self.vendor else (
                "a blocked C++ GEMM" if heavy.op in ("linear", "matmul", "bmm") else
                "a direct C++ transposed convolution" if heavy.op in ir.CONV_TRANSPOSE_OPS else
                "a direct C++ convolution")
            lines.append(f"Heavy op: {heavy.op}, through {how}.")
        lines.append(self._summary() + ".")
        lines.extend(f"Rewrite: {note}" for note in self.program.notes)
        if self.program.degenerate:
            lines.append(f"Degenerate problem: {self.program.degenerate}")
        lines.append("Configuration: " + ", ".join(f"{k}={v}" for k, v in sorted(self.config.items())))
        return "\n".join(lines)


def render(program: ir.Program, problem_source: str, config: Mapping[str, Any] | None = None,
           vendor_gemm: bool = False) -> str:
    """The solution file for `program` with one configuration; LoweringError when it does not fit."""
    return _Renderer(plan(program), problem_source, config or {}, vendor_gemm).render()


def tunables(program: ir.Program) -> list[str]:
    """The configuration keys that change the code generated for `program`."""
    lowered = plan(program)
    keys = []
    if program.heavy is not None and program.heavy.op in ("linear", "matmul", "bmm"):
        keys += ["block_m", "block_n"]
    if lowered.reduction is None and (lowered.pre or lowered.post):
        keys.append("cols")
    elif lowered.reduction is not None:
        keys.append("chunk" if lowered.reduction.attr("dim") == len(lowered.iter_shape) - 1 else "cols")
    return keys


def variants(program: ir.Program, problem_source: str, vendor_gemm: bool = False,
             limit: int = 4) -> list[tuple[dict[str, Any], str]]:
    """Up to `limit` (configuration, source) pairs, the default first; vendor variants only when allowed."""
    keys = tunables(program)
    vendors = (False, True) if vendor_gemm and program.heavy is not None else (False,)
    result: list[tuple[dict[str, Any], str]] = []
    seen: set[str] = set()
    grid = itertools.product(vendors, *(SPACE[key] for key in keys))
    for values in sorted(grid, key=lambda v: sum(1 for x, k in zip(v[1:], keys, strict=True)
                                                  if x != DEFAULT_CONFIG[k])):
        vendor, *chosen = values
        if vendor and keys and any(k.startswith("block") and chosen[keys.index(k)] != DEFAULT_CONFIG[k]
                                   for k in keys):
            continue  # GEMM tiles mean nothing when the vendor's GEMM runs
        config: dict[str, Any] = dict(zip(keys, chosen, strict=True))
        if vendor_gemm and program.heavy is not None:
            config["vendor"] = vendor
        source = render(program, problem_source, config, bool(vendor))
        if source not in seen:
            seen.add(source)
            result.append((config, source))
        if len(result) >= limit:
            break
    return result


__all__ = ["LoweringError", "render", "tunables", "variants"]
