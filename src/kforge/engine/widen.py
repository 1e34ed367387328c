"""Half-precision problems for a backend that computes in float32 only (the C++ backend).

A problem in float16 or bfloat16 is lowered as its float32 twin (`widened`): every half value of the program
becomes float32, the backend writes its kernels for that, and the solution converts at the edges
(`with_half_edges`): the reference's parameters are widened once at construction (exactly: every half value
is a float32 value), the inputs on each call, and each output goes back to the dtype the reference returns.
Computing in float32 is at least as accurate as the reference's half arithmetic, well inside the tolerance the
harness allows half outputs.
"""

from __future__ import annotations

import dataclasses

from kforge.engine import ir

HALF_DTYPES = ("float16", "bfloat16")
_TORCH_NAMES = {"float16": "torch.float16", "bfloat16": "torch.bfloat16", "float32": "torch.float32",
                "float64": "torch.float64", "int64": "torch.int64", "int32": "torch.int32", "bool": "torch.bool"}


def has_half(program: ir.Program) -> bool:
    values: tuple[ir.TensorSpec | ir.Node, ...] = (*program.inputs, *program.params, *program.prepared,
                                                   *program.all_nodes())
    return any(value.dtype in HALF_DTYPES for value in values)


def widened(program: ir.Program) -> ir.Program:
    """`program` with every float16/bfloat16 value in float32, and a note saying so."""
    def wide(value: ir.TensorSpec | ir.Node) -> ir.TensorSpec | ir.Node:
        return dataclasses.replace(value, dtype="float32") if value.dtype in HALF_DTYPES else value

    return program.replace(
        inputs=tuple(wide(spec) for spec in program.inputs), params=tuple(wide(spec) for spec in program.params),
        prepared=tuple(wide(node) for node in program.prepared), nodes=tuple(wide(node) for node in program.nodes),
        heavy=wide(program.heavy) if program.heavy is not None else None,
        notes=(*program.notes, "computed in float32 (the backend has no half-precision kernels): parameters "
               "widened once, inputs on each call, outputs narrowed back"))


def output_dtypes(program: ir.Program) -> list[str]:
    """The torch dtype expression of each output the reference returns, in order."""
    return [_TORCH_NAMES[program.spec(name).dtype] for name in program.returned]


def with_half_edges(solution: str, dtypes: list[str], single: bool) -> str:
    """The float32 `solution` (its class `ModelNew`) wrapped to take and return what the reference does:
    `dtypes` per output (torch dtype expressions), `single` when forward returns one tensor, not a tuple."""
    marker = "\nclass ModelNew("
    if solution.count(marker) != 1:
        raise ValueError("the solution does not define ModelNew exactly once at module level")
    body = solution.replace(marker, "\nclass _Float32Model(")
    narrow = ("return result.to(_OUTPUT_DTYPES[0])" if single else
              "return tuple(out.to(dtype) for out, dtype in zip(result, _OUTPUT_DTYPES, strict=True))")
    return f'''{body.rstrip()}


# The reference computes in half precision; the kernels above compute in float32.
_OUTPUT_DTYPES = ({", ".join(dtypes)},)


class ModelNew(_Float32Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.float()  # the reference's half parameters, widened exactly, once

    def forward(self, *args):
        wide = [arg.float() if isinstance(arg, torch.Tensor) and arg.is_floating_point() else arg for arg in args]
        result = super().forward(*wide)
        {narrow}
'''
