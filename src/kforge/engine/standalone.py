"""Standalone kernels: ops that make a kernel of their own, for the C++ and Triton backends.

Pooling windows, scans along a dim and triangular masks read their input in a pattern the fused epilogue
kernels do not have (a window, a running value, an element's position), so the partitioner gives each its own
kernel (`ir.STANDALONE_OPS`) and this module writes it: a whole solution file, in the form the backends write
theirs (`compose` joins it with the others). Templates: `kforge/data/engine/standalone/`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kforge.engine import ir
from kforge.engine.capture import cannot_lower
from kforge.engine.construct import REFERENCE_CLASS, reference_source
from kforge.templating import template_environment

# Configurations the Triton kernels are offered in, the default first.
TRITON_CONFIGS: dict[str, tuple[dict[str, int], ...]] = {
    "pool": ({"BLOCK": 256, "num_warps": 4}, {"BLOCK": 1024, "num_warps": 8}),
    "scan": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "mask": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "flip": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "attention": ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2},
                  {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
                  {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3}),
}
_KINDS = {**{op: "pool" for op in ir.WINDOW_OPS}, **{op: "scan" for op in ir.SCAN_OPS},
          **{op: "mask" for op in ir.MASK_OPS}, "attention": "attention", "flip": "flip"}
_OPERANDS = {"attention": ("q", "k", "v")}  # what the templates call an op's operands (one operand: x)


def is_standalone(program: ir.Program) -> bool:
    """Whether `program` is one standalone op (a kernel this module writes)."""
    return any(node.op in ir.STANDALONE_OPS for node in program.nodes)


def variants(program: ir.Program, problem_source: str, language: str,
             limit: int = 2) -> list[tuple[dict[str, Any], str]]:
    """(configuration, solution file) pairs for a one-op program, the default first; LoweringError otherwise."""
    node = _the_op(program)
    context = {**_context(node), **_binding(node, program)}
    reference = reference_source(problem_source).strip()
    if language == "cpp":
        if node.dtype != "float32":
            raise cannot_lower(f"{node.op} in {node.dtype} (the C++ backend computes in float32)")
        return [({}, _cpp_solution(context, reference))]
    if language != "triton":
        raise cannot_lower(f"{node.op} (no standalone kernel in {language})")
    environment = template_environment("kforge", "data/engine/standalone", trim_blocks=True)
    configs = list(TRITON_CONFIGS[context["kind"]])
    if context["kind"] == "attention" and node.dtype == "float32":
        # float32 accuracy either through tensor cores (three TF32 products) or plain FMAs, the former first
        configs = [{**config, "precision": precision} for config in configs for precision in ("tf32x3", "ieee")]
    found = []
    for config in configs[:limit]:
        text = ", ".join(f"{key}={value}" for key, value in config.items())
        extra = {"precision": f', input_precision="{config["precision"]}"'} if "precision" in config else {}
        found.append((dict(config), environment.get_template("triton.py.j2").render(
            **{**context, **extra}, config=config, config_text=text, reference=reference)))
    return found


def _the_op(program: ir.Program) -> ir.Node:
    ops = [node for node in program.nodes if node.op not in ir.VIEW_OPS]
    inputs = {spec.name for spec in program.inputs}
    if len(ops) != 1 or ops[0].op not in ir.STANDALONE_OPS or program.params or program.outputs != (ops[0].name,) \
            or set(ops[0].value_args) != inputs or len(ops[0].value_args) != len(ops[0].args):
        raise cannot_lower("a standalone op with other work in its kernel", op=False)
    return ops[0]


def _binding(node: ir.Node, program: ir.Program) -> dict[str, Any]:
    """The forward's arguments (one per program input, in order) and the line naming the op's operands."""
    position = {spec.name: index for index, spec in enumerate(program.inputs)}
    operands = _OPERANDS.get(node.op, ("x",))
    arguments = [f"a{index}" for index in range(len(program.inputs))]
    chosen = [f"a{position[str(arg)]}" for arg in node.args]
    return {"arguments": ", ".join(arguments), "argument_list": arguments, "operand_args": chosen,
            "binding": f"{', '.join(operands)} = {', '.join(chosen)}"}


def _context(node: ir.Node) -> dict[str, Any]:
    kind = _KINDS[node.op]
    context: dict[str, Any] = {"kind": kind, "op": node.op}
    if kind == "pool":
        rank = len(node.attr("kernel"))

        def pair(key: str, pad: int) -> tuple[int, int]:
            values = tuple(int(v) for v in node.attr(key))
            return values if rank == 2 else (pad, values[0])  # type: ignore[return-value]

        context.update(two_d=rank == 2, k=pair("kernel", 1), s=pair("stride", 1), p=pair("padding", 0),
                       d=pair("dilation", 1), ceil=str(bool(node.attr("ceil_mode"))).lower(),
                       ceil_py=str(bool(node.attr("ceil_mode"))),
                       include_pad=bool(node.attr("count_include_pad", True)), divisor=node.attr("divisor"))
        context["summary"] = (f"{node.op}{rank}d, window {node.attr('kernel')}, stride {node.attr('stride')}, "
                              f"padding {node.attr('padding')}")
    elif kind == "scan":
        identity = {"cumsum": "0.0", "cumprod": "1.0", "cummax": 'float("-inf")'}[node.op]
        context.update(dim=int(node.attr("dim")), identity=identity,
                       summary=f"{node.op} along dim {node.attr('dim')}")
    elif kind == "flip":
        rank = len(node.shape)
        context.update(flipped=[4 - rank + d for d in node.attr("dims")],
                       summary=f"flip along dims {node.attr('dims')}")
    elif kind == "attention":
        context.update(scale=repr(float(node.attr("scale"))), causal=bool(node.attr("causal")),
                       precision=', input_precision="ieee"' if node.dtype == "float32" else "",
                       summary=f"fused attention{' (causal)' if node.attr('causal') else ''}, online softmax")
    else:
        fill = float(node.attr("fill", 0.0))
        context.update(diagonal=int(node.attr("diagonal", 0)), fill_value=fill,
                       fill='float("-inf")' if fill == float("-inf") else repr(fill),
                       summary=f"{node.op} (diagonal {node.attr('diagonal', 0)}) of the last two dims")
    return context


def _cpp_solution(context: dict[str, Any], reference: str) -> str:
    fill = context.get("fill_value", 0.0)
    cpp_fill = ("-std::numeric_limits<float>::infinity()" if fill == float("-inf") else f"{fill!r}f")
    scale = context.get("scale")
    cpp = template_environment("kforge", "data/engine/standalone").get_template("kernels.cpp.j2").render(
        **{**context, "fill": cpp_fill, "scale": f"{scale}f" if scale else ""}).strip()
    digest = hashlib.sha256(cpp.encode()).hexdigest()[:12]
    return template_environment("kforge", "data/engine/cpp").get_template("solution.py.j2").render(
        docstring=f"Generated by kforge's builtin engine (no LLM) for the CPU: {context['summary']}.", cpp=cpp,
        extension=f"kforge_builtin_{digest}", functions=["forward"], reference=reference,
        reference_class=REFERENCE_CLASS, prepared=[], inputs=context["argument_list"], scalar_lines=[],
        call_args=context["operand_args"])
