"""Standalone kernels: ops that make a kernel of their own, for the C++ and Triton backends.

Pooling windows, scans along a dim, triangular masks and per-channel statistics read their input in a pattern
the fused epilogue kernels do not have (a window, a running value, an element's position, a channel across
the batch), so the partitioner gives each its own
kernel (`ir.STANDALONE_OPS`) and this module writes it: a whole solution file, in the form the backends write
theirs (`compose` joins it with the others). Templates: `kforge/data/engine/standalone/`. In Triton, pointwise
work on the op's result (in its shape and dtype, reading inputs of that shape or of one element) is applied
in the same kernel before its store (`EPILOGUE_KINDS`: `pool(x) * 3` is one launch, not two).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from kforge.engine import ir
from kforge.engine.capture import cannot_lower
from kforge.engine.construct import REFERENCE_CLASS, reference_source
from kforge.engine.triton.emit import literal, spelled_expression, var
from kforge.templating import template_environment

# Configurations the Triton kernels are offered in, the default first.
TRITON_CONFIGS: dict[str, tuple[dict[str, int | str], ...]] = {
    "pool": ({"BLOCK": 256, "num_warps": 4}, {"BLOCK": 1024, "num_warps": 8}),
    "scan": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "mask": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "flip": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "fill": ({"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 4096, "num_warps": 8}),
    "moments": ({"BLOCK": 4096, "num_warps": 8}, {"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 8192, "num_warps": 16}),
    "attention": ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2},
                  {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
                  {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3}),
}
_KINDS = {**{op: "pool" for op in ir.WINDOW_OPS}, **{op: "scan" for op in ir.SCAN_OPS},
          **{op: "mask" for op in ir.MASK_OPS}, "attention": "attention", "flip": "flip", "moments": "moments",
          "fill": "fill"}
_OPERANDS = {"attention": ("q", "k", "v")}  # what the templates call an op's operands (one operand: x)


def is_standalone(program: ir.Program) -> bool:
    """Whether `program` is one standalone op (a kernel this module writes)."""
    return any(node.op in ir.STANDALONE_OPS for node in program.nodes)


def variants(program: ir.Program, problem_source: str, language: str,
             limit: int = 2) -> list[tuple[dict[str, Any], str]]:
    """(configuration, solution file) pairs for a one-op program, the default first; LoweringError otherwise."""
    node, epilogue = _the_op(program)
    context = {**_context(node), **_binding(node, program)}
    context["epilogue"] = _epilogue(node, epilogue, program, language, context["kind"]) if epilogue else None
    reference = reference_source(problem_source).strip()
    kind = context["kind"]
    if language == "cpp":
        if node.dtype != "float32" and (kind != "fill" or node.dtype not in _CPP_FILL_TYPES):
            raise cannot_lower(f"{node.op} in {node.dtype} (the C++ backend computes in float32)")
        return [({}, _cpp_solution(context, reference))]
    if language != "triton":
        raise cannot_lower(f"{node.op} (no standalone kernel in {language})")
    environment = template_environment("kforge", "data/engine/standalone", trim_blocks=True)
    # The launcher and the layout copies every generated Triton module shares (kforge/data/engine/triton/_helpers.j2)
    helpers = template_environment("kforge", "data/engine/triton", trim_blocks=True).get_template("_helpers.j2").module
    direct_helper = str(helpers.direct()).strip()  # type: ignore[attr-defined]
    copy_helpers = str(helpers.laid_out()).strip()  # type: ignore[attr-defined]
    dense_helper = str(helpers.dense()).strip()  # type: ignore[attr-defined]
    configs = list(TRITON_CONFIGS[context["kind"]])
    if context["kind"] == "attention" and node.dtype == "float32":
        # float32 accuracy either through tensor cores (three TF32 products) or plain FMAs, the former first
        configs = [{**config, "precision": precision} for config in configs for precision in ("tf32x3", "ieee")]
    found = []
    for config in configs[:limit]:
        text = ", ".join(f"{key}={value}" for key, value in config.items())
        extra = {"precision": f', input_precision="{config["precision"]}"'} if "precision" in config else {}
        found.append((dict(config), environment.get_template("triton.py.j2").render(
            **{**context, **extra}, config=config, config_text=text, reference=reference,
            direct_helper=direct_helper, copy_helpers=copy_helpers, dense_helper=dense_helper)))
    return found


def _the_op(program: ir.Program) -> tuple[ir.Node, tuple[ir.Node, ...]]:
    """The program's standalone op, reading inputs only, and the pointwise nodes after it (its epilogue)."""
    ops = [node for node in program.nodes if node.op not in ir.VIEW_OPS]
    inputs = {spec.name for spec in program.inputs}
    if not ops or ops[0].op not in ir.STANDALONE_OPS or program.params or program.outputs != (ops[-1].name,) \
            or not set(ops[0].value_args) <= inputs or len(ops[0].value_args) != len(ops[0].args):
        raise cannot_lower("a standalone op with other work in its kernel", op=False)
    return ops[0], tuple(ops[1:])


# What the C++ fill writes, by the node's dtype: (ATen scalar type, C++ type).
_CPP_FILL_TYPES = {"float32": ("kFloat32", "float"), "int64": ("kInt64", "int64_t"), "int32": ("kInt32", "int32_t")}
# The kinds whose Triton kernels apply an epilogue before they store (attention stores a tile: not yet).
EPILOGUE_KINDS = ("pool", "scan", "mask", "flip")
_FLOATS = ("float32", "float16", "bfloat16")


def _epilogue(node: ir.Node, epilogue: tuple[ir.Node, ...], program: ir.Program, language: str,
              kind: str) -> dict[str, Any]:
    """What the Triton template needs to apply `epilogue` (pointwise nodes on the op's result, in its shape and
    dtype) before the store: the tensors it reads (inputs of the result's shape or of one element, read where
    the result is stored), one line per node, the value stored. LoweringError where it cannot."""
    if language != "triton" or kind not in EPILOGUE_KINDS:
        raise cannot_lower("a standalone op with other work in its kernel", op=False)
    if node.dtype not in _FLOATS:
        raise cannot_lower(f"{node.op} in {node.dtype} followed by other work in its kernel", op=False)
    position = {spec.name: index for index, spec in enumerate(program.inputs)}
    computed = {node.name}
    leaves: dict[str, dict[str, Any]] = {}
    lines = []
    for step in epilogue:
        if step.op not in ir.POINTWISE_OPS or step.shape != node.shape or step.dtype != node.dtype:
            raise cannot_lower(f"{step.op} after {node.op} (other than pointwise in its shape and dtype)", op=False)
        operands = []
        for arg in step.args:
            if not isinstance(arg, str):
                operands.append(literal(arg))
                continue
            if arg not in computed and arg not in leaves:
                leaves[arg] = _epilogue_leaf(program, arg, node, kind, position)
            operands.append(var(arg))
        lines.append(f"{var(step.name)} = {spelled_expression(step, operands)}")
        computed.add(step.name)
    return {"leaves": list(leaves.values()), "lines": lines, "value": var(node.name),
            "result": var(epilogue[-1].name)}


def _epilogue_leaf(program: ir.Program, name: str, node: ir.Node, kind: str,
                   position: dict[str, int]) -> dict[str, Any]:
    """An input the epilogue reads, laid out in the result's shape on each call (`_dense`: itself where it
    already is, so any input shape that broadcasts is right, not only the captured one)."""
    spec = program.spec(name)
    if name not in position or spec.dtype not in _FLOATS:
        raise cannot_lower(f"{node.op} followed by work on {name!r} (only float inputs are read there)", op=False)
    if tuple(spec.shape) != tuple(node.shape) and math.prod(spec.shape) != 1:
        raise cannot_lower(f"{node.op} followed by work on a value broadcast to its shape", op=False)
    if kind == "scan":  # laid out as the scan's rows are
        python = f"_laid_out(_dense(a{position[name]}, x.shape).movedim({node.attr('dim')}, -1))"
    else:
        python = f"_dense(a{position[name]}, out.shape)"
    return {"arg": "e" + var(name)[1:], "var": var(name), "python": python}


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

        def triple(key: str, pad: int) -> tuple[int, ...]:
            """The attr over (depth, height, width), the dims not pooled as a window of one."""
            return (pad,) * (3 - rank) + tuple(int(v) for v in node.attr(key))

        context.update(rank=rank, k=triple("kernel", 1), s=triple("stride", 1), p=triple("padding", 0),
                       d=triple("dilation", 1), ceil=str(bool(node.attr("ceil_mode"))).lower(),
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
    elif kind == "fill":
        context.update(_fill_context(node))
    elif kind == "moments":
        context["summary"] = "each channel's mean and biased variance over every other dim (batch statistics)"
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


def _fill_context(node: ir.Node) -> dict[str, Any]:
    """A fill's static shape, the run of elements one index along its dim spans (`inner`) and the dim's length,
    its start and step as literals of its dtype."""
    dim = int(node.attr("dim", 0))
    shape = tuple(int(size) for size in node.shape)
    integral = node.dtype in ir.INTEGER_DTYPES
    start, step = (float(node.attr(key, 0.0)) for key in ("start", "step"))
    spell = (lambda v: repr(int(v))) if integral else repr
    return {"shape": shape, "dim": dim, "inner": math.prod(shape[dim + 1:]), "length": shape[dim] if shape else 1,
            "start": spell(start), "step": spell(step), "integral": integral, "dtype": node.dtype,
            "cpp_type": _CPP_FILL_TYPES.get(node.dtype, ("", ""))[1],
            "aten_type": _CPP_FILL_TYPES.get(node.dtype, ("", ""))[0],
            "summary": f"a {node.dtype} tensor of shape {shape}: {start!r} + {step!r} * (its index along dim {dim})"}


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
