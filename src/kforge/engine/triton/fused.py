"""Fused kernels for an epilogue with no heavy op, or after one: a pointwise chain, or one reduction.

A pointwise chain is one kernel over the output (`pointwise.py.j2`): a fast kernel for contiguous operands of
the output's shape and parameters (see `fast`), and a strided one for any broadcasting and any shape. A chain
with one reduction or row normalization (sum, mean, amax, amin, logsumexp, softmax, log_softmax, layer_norm
over the last or a middle dim) is one kernel too (`rows.py.j2`, `_rows.j2`): the pointwise work before the
reduction is done while loading its tiles, the work after it while storing. A prepared value (a reduction of
parameters) gets the same kernel in a function of its own (`rows_function.j2`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kforge.engine import dtypes
from kforge.engine.ir import INDEX_OPS, REDUCE_OPS, ROW_OPS, Node, Program, TensorSpec
from kforge.engine.triton.emit import Unsupported, literal, var
from kforge.engine.triton.fast import param_root, prelude_split, tiling
from kforge.engine.triton.lowering import (
    Config,
    Leaf,
    Lowering,
    Split,
    broadcast_mode,
    dtype_arg,
    is_scalar,
    kernel_argument,
    param_local,
)

# ---- tunables ------------------------------------------------------------------------------------------------
# Each list starts with a configuration that is good on most shapes: the tuner judges the first one first.
_POINTWISE = [{"TILE": tile, "BLOCK_COLS": cols, "num_warps": warps}
              for tile, cols, warps in [(2048, 1024, 4), (1024, 1024, 4), (4096, 1024, 8), (4096, 256, 4),
                                        (8192, 2048, 8), (1024, 128, 2)]]
# Rows: TILE elements a program (num_warps for them); a row up to ROW_MAX long (last dim) is read once and held
# whole (one pass: softmax and layer norm read and write each element once), with the warps scaled to keep the
# elements a thread holds (up to 16 warps); a longer row is walked in blocks of BLOCK_R (two or three passes).
# The default holds 16 elements a thread: a row of 8192 gets 16 warps.
_ROWS = [{"TILE": tile, "BLOCK_R": block, "ROW_MAX": held, "num_warps": warps}
         for tile, block, held, warps in [(2048, 1024, 16384, 4), (4096, 1024, 16384, 4), (16384, 4096, 16384, 16),
                                          (4096, 4096, 4096, 8), (1024, 256, 256, 2), (8192, 8192, 32768, 8),
                                          (4096, 128, 128, 4)]]


class FusedLowering(Lowering):
    """The fused kernels: a pointwise chain or one reduction over the compute a split leaves (with the
    vendor's heavy op, after a generated one, or with none)."""

    def fused_offers(self, split: Split, tag: Config) -> Iterator[tuple[Config, Any]]:
        reductions = [node for node in split.compute if node.op in REDUCE_OPS + INDEX_OPS + ROW_OPS]
        if not split.compute:
            yield {**tag}, lambda: self.render_python_only(split)
        elif len(reductions) > 1:
            raise Unsupported("the Triton backend fuses at most one reduction per kernel")
        elif reductions:
            for config in _ROWS:
                yield {**tag, **config}, lambda config=config: self.render_rows(split, reductions[0], config)
        else:
            for config in _POINTWISE:
                yield {**tag, **config}, lambda config=config: self.render_pointwise(split, config)

    def prepared_function(self, node: Node, function: str) -> str:
        """A function computing a prepared value (a reduction of parameters) with its own fused kernel, each call."""
        if node.op not in REDUCE_OPS + ROW_OPS:
            raise Unsupported(f"the Triton backend cannot prepare {node.op!r} (node {node.name!r})")
        operands = tuple(TensorSpec(name, self.program.shape(name), self.program.spec(name).dtype)
                         for name in node.value_args)
        lowering = FusedLowering(Program(inputs=operands, params=(), nodes=(node,), outputs=(node.name,)), "")
        split = lowering.split(heavy_python=None)
        return RowsPlan(lowering, split, node).render(
            _ROWS[0], "rows_function.j2", function=function, kernel=f"{function}_kernel",
            doc=f"{node.op} of {', '.join(node.value_args)} over dim {node.attr('dim')}: the prepared {node.name}.")

    def render_pointwise(self, split: Split, config: Config) -> str:
        leaves = self.leaves_of(split, split.compute)
        if not leaves:
            raise Unsupported("the Triton backend needs at least one tensor operand")
        scalars = self.scalars_of(split, split.compute)
        fast = self.pointwise_fast(split, leaves, scalars)
        common = self.common(split, config, "A fused pointwise kernel: every operation in one pass over the output.")
        if fast is not None:
            common["prelude"], fast["rest"] = prelude_split(split.prelude, [*fast["runtime"], *scalars])
        return self.env.get_template("pointwise.py.j2").render(
            **common, leaves=leaves, body=self.body(split, split.compute), scalars=scalars, fast=fast,
            strided_kernel="_fused_strided" if fast else "_fused")

    def pointwise_fast(self, split: Split, leaves: list[Leaf], scalars: list[str]) -> dict[str, Any] | None:
        """The fast path of a pointwise module (see `kforge.engine.triton.fast`), or None where it has none: every
        operand either a parameter (or a reshape of one) or of the output's shape."""
        out_shape = self.program.shape(self.resolve(split, self.output.name))
        roots = {leaf.name: param_root(self.program, leaf.name) for leaf in leaves}
        runtime = [leaf for leaf in leaves if roots[leaf.name] is None]
        fixed = [leaf for leaf in leaves if roots[leaf.name] is not None]
        if not runtime or any(self.program.shape(leaf.name) != out_shape for leaf in runtime):
            return None
        layout = tiling(out_shape, [self.program.shape(leaf.name) for leaf in fixed])
        if layout is None:
            return None
        first = runtime[0].python
        condition = [f"{first}.is_contiguous()", f"{first}.dim() == {len(out_shape)}"]
        for leaf in runtime[1:]:
            condition += [f"{leaf.python}.shape == {first}.shape", f"{leaf.python}.is_contiguous()"]
        condition += [f"{first}.shape[{d}] == {out_shape[d]}" for d in layout.varying]
        loads = [f"{leaf.var} = tl.load({leaf.arg} + offs, mask=mask, other=0.0).to({leaf.held})"
                 if roots[leaf.name] is None else
                 layout.load(leaf.arg, leaf.var, self.program.shape(leaf.name)).replace(".to(tl.float32)",
                                                                                      f".to({leaf.held})")
                 for leaf in leaves]
        passed = [leaf.python if roots[leaf.name] is None else param_local(str(roots[leaf.name]))
                  for leaf in leaves]
        return {"condition": " and ".join(condition), "first": first, "loads": loads, "passed": passed,
                "dtype_arg": dtype_arg(self.program.spec(runtime[0].name).dtype, self.output.dtype),
                "cols": layout.cols(first), "runtime": [leaf.python for leaf in runtime],
                "flat": not layout.varying,  # no operand indexed by position: one flat block, 1-D grid
                "spans": [(name, value) for (name, _, _), value in zip(layout.spans, layout.span_values(first),
                                                                       strict=True)]}

    def render_rows(self, split: Split, red: Node, config: Config) -> str:
        return RowsPlan(self, split, red).render(config)


class RowsPlan:
    """One reduction with the pointwise work before it (on its tiles) and after it (on its output)."""

    def __init__(self, lowering: Lowering, split: Split, red: Node) -> None:
        self.lowering = lowering
        self.split = split
        self.red = red
        program = lowering.program
        source = lowering.resolve(split, str(red.args[0]))
        self.shape = program.shape(source)
        self.dim = int(red.attr("dim"))
        self.from_end = len(self.shape) - 1 - self.dim
        before = _ancestors(split, source)
        self.pre = [node for node in split.compute if node.name in before]
        self.post = [node for node in split.compute if node.name not in before and node is not red]
        output = program.spec(lowering.resolve(split, lowering.output.name))
        self.full = output.shape == self.shape and len(self.shape) > 0
        if not self.full and output.shape != red.shape:
            raise Unsupported("the Triton backend cannot broadcast a reduction's result to a new shape")
        self.source = source

    def render(self, config: Config, template: str = "rows.py.j2", **extra: Any) -> str:
        lowering, split, red = self.lowering, self.split, self.red
        tile_leaves = lowering.leaves_of(split, [*self.pre, Node("_", "neg", (self.source,), ())])
        norm_args = list(red.value_args[1:])  # layer_norm's weight and bias
        known = {leaf.name for leaf in tile_leaves}
        tile_leaves += [Leaf(arg, split.python[arg], root=param_root(lowering.program, arg))
                        for arg in norm_args if arg not in known]
        source_held = lowering.held(split, self.source)
        if red.op != "sum" and dtypes.is_integer(source_held):
            raise Unsupported(f"the Triton backend computes {red.op} of floats only (node {red.name!r})")
        for leaf in tile_leaves:
            leaf.mode = broadcast_mode(leaf, lowering.program.shape(leaf.name), self.shape, self.dim)
            leaf.prepare = kernel_argument(leaf, "shape")
        post_leaves = [leaf for leaf in lowering.leaves_of(split, self.post)
                       if leaf.name not in {t.name for t in tile_leaves}]
        for leaf in post_leaves:
            if self.full:
                leaf.mode = broadcast_mode(leaf, lowering.program.shape(leaf.name), self.shape, self.dim)
            else:
                leaf.mode = "scalar" if is_scalar(leaf, lowering.program.shape(leaf.name)) else "full"
            leaf.prepare = kernel_argument(leaf, "shape" if self.full else "out_shape")
        weight = var(norm_args[0]) if len(norm_args) > 0 else ""
        bias = var(norm_args[1]) if len(norm_args) > 1 else ""
        stat = {"sum": "sum", "mean": "sum", "amax": "max", "amin": "min", "layer_norm": "moments", "argmax": "argmax",
                "argmin": "argmin"}.get(red.op, "lse")
        # A sum of integers or booleans accumulates in int64, as torch sums them.
        acc = dtypes.held(red.dtype) if red.op == "sum" else dtypes.FLOAT
        x = lowering.converted(var(self.source), self.source, acc, lambda name: lowering.held(split, name))
        common = lowering.common(split, config, f"A fused {red.op} over one dim, with the pointwise work before "
                                                "it done on its input tiles and the work after it on its output.")
        scalars = lowering.scalars_of(split, [*self.pre, *self.post, red])
        fast = self.fast(tile_leaves, post_leaves)
        if fast is not None:
            common["prelude"], fast["rest"] = prelude_split(split.prelude, [*fast["runtime"], *scalars])
        elif self.from_end == 0:
            # No fast path (some operand broadcast in full): a row reduction reads each such operand where it
            # lies, at its strides, rather than from a copy of the reduced operand's shape.
            for leaf in tile_leaves + (post_leaves if self.full else []):
                if leaf.mode == "full":
                    leaf.mode = "strided"
        tile_lines = [_rows_load(leaf, full=True) for leaf in tile_leaves] + lowering.body(split, self.pre)
        post_lines = [_rows_load(leaf, full=self.full) for leaf in post_leaves] + lowering.body(split, self.post)
        strided = [leaf for leaf in tile_leaves + post_leaves if leaf.mode == "strided"]
        direct = [leaf for leaf in tile_leaves + post_leaves if leaf.mode != "strided"]
        first = next(leaf for leaf in tile_leaves if leaf.root is None) if fast else tile_leaves[0]
        return lowering.env.get_template(template).render(
            **{**common, **extra}, fast=fast, first=first.python,
            dtype_arg=dtype_arg(lowering.program.spec(first.name).dtype, lowering.output.dtype),
            passed=fast["passed"] if fast else [leaf.prepare for leaf in direct],
            # The kernel's operands: those read at their strides first (the four strides of each follow it).
            strided=strided, leaves=direct,
            # The operands whose broadcast shape is the reduced operand's (layer norm's weight and bias left out).
            tile_leaves=[leaf for leaf in tile_leaves if leaf.name not in norm_args] or tile_leaves,
            scalars=scalars, last=self.from_end == 0,
            from_end=self.from_end, full=self.full, keepdim=bool(red.attr("keepdim", False)), stat=stat,
            mean=red.op in ("mean", "layer_norm"), red=var(red.name), red_op=red.op,
            x=x, acc=f"tl.{acc}", zero="0" if dtypes.is_integer(acc) else "0.0",
            tile_lines=tile_lines, post_lines=post_lines, weight=weight, bias=bias,
            eps=literal(red.attr("eps", 1e-5)))

    def fast(self, tile_leaves: list[Leaf], post_leaves: list[Leaf]) -> dict[str, Any] | None:
        """The fast path (see `kforge.engine.triton.fast`): the operands of the reduced operand's shape read as
        they are when contiguous, with no broadcast; None where some operand always needs laying out (a
        parameter broadcast in full, an operand of the output's shape)."""
        program = self.lowering.program
        leaves = tile_leaves + post_leaves
        runtime = [leaf for leaf in leaves if leaf.root is None]
        if (not runtime or any(leaf.mode == "full" and leaf.root is not None for leaf in leaves)
                or any(leaf not in tile_leaves or program.shape(leaf.name) != self.shape for leaf in runtime)):
            return None
        first = runtime[0].python
        checks = [f"{leaf.python}.shape == {first}.shape and {leaf.python}.is_contiguous()" for leaf in runtime[1:]]
        rank = max((len(program.shape(leaf.name)) for leaf in leaves if leaf.root is not None), default=0)
        if rank > self.from_end + 1:  # a parameter with more dims than the reduction needs
            checks.append(f"{first}.dim() >= {rank}")
        if any(leaf.mode == "row" for leaf in leaves):
            checks.append(f"{first}.shape[{-1 - self.from_end}] == {self.shape[self.dim]}")
        alone = not checks  # one operand and nothing to check: made contiguous, no branch
        passed = [(f"{leaf.python}.contiguous()" if alone else leaf.python) if leaf.root is None else leaf.prepare
                  for leaf in leaves]
        return {"condition": " and ".join([f"{first}.is_contiguous()", *checks]) if checks else "", "first": first,
                "runtime": [leaf.python for leaf in runtime], "passed": passed}


def _ancestors(split: Split, name: str) -> set[str]:
    """`name` and every compute value it depends on."""
    by_name = {node.name: node for node in split.compute}
    found: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        current = split.alias.get(current, current)
        if current in found or current not in by_name:
            continue
        found.add(current)
        stack.extend(by_name[current].value_args)
    return found


def _rows_load(leaf: Leaf, full: bool) -> str:
    if leaf.mode == "scalar":
        return f"{leaf.var} = tl.load({leaf.arg}).to({leaf.held})"
    if leaf.mode == "row":
        return f"{leaf.var} = tl.load({leaf.arg} + r, mask=r < R, other=0.0).to({leaf.held})[None, :]"
    if leaf.mode == "strided":  # its row's start computed once (see `_rows.j2`), its elements at its last stride
        return (f"{leaf.var} = tl.load({leaf.arg} + {leaf.arg}_row[:, None] + r[None, :] * {leaf.arg}_s3, "
                f"mask=mask, other=0.0).to({leaf.held})")
    if full:
        return f"{leaf.var} = tl.load({leaf.arg} + offs, mask=mask, other=0.0).to({leaf.held})"
    return f"{leaf.var} = tl.load({leaf.arg} + out_a, mask=a_mask, other=0.0).to({leaf.held})"
