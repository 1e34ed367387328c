"""The dtypes a kernel computes in, shared by the backends: integers in their own width, the rest in float32.

A kernel holds every float value in float32 and every boolean (a comparison's result, a logical op's, a cast to
bool, a boolean input) as 1.0/0.0, as before integers existed; an integer value (an int64 or int32 input, an
integer op on it, a sum of booleans) is held in its own dtype, so integer results are exact. A pointwise node
computes in one dtype (`node_dtype`): its result's, except comparisons (in the operands' integer dtype when
all are integers and every constant is integral, else in float32) and the logical ops (masks). An operand held
in another dtype is converted first (`operand_dtypes`), and a backend spells the conversion, so a cast is that
conversion alone, but a cast to bool (`!= 0`).
"""

from __future__ import annotations

from collections.abc import Callable

from kforge.engine import ir
from kforge.engine.capture import cannot_lower

FLOAT = "float32"
# Pointwise ops a kernel computes on integers (any other op of an integer result is refused).
INTEGER_OPS = ("neg", "abs", "add", "sub", "mul", "maximum", "minimum", "remainder", "where", "cast", "relu",
               "clamp", *ir.COMPARE_OPS)

DtypeOf = Callable[[str], str]


def held(dtype: str) -> str:
    """The dtype a kernel holds a value of `dtype` in."""
    return dtype if dtype in ir.INTEGER_DTYPES else FLOAT


def is_integer(dtype: str) -> bool:
    return dtype in ir.INTEGER_DTYPES


def widest(dtypes: list[str]) -> str:
    """Of integer dtypes, the one torch promotes them to."""
    return "int64" if "int64" in dtypes else dtypes[0]


def node_dtype(node: ir.Node, dtype_of: DtypeOf) -> str:
    """The dtype pointwise `node` computes in; `dtype_of` gives the held dtype of a value it names."""
    if node.op in ir.COMPARE_OPS:
        operands = [dtype_of(arg) for arg in node.value_args]
        constants = [float(arg) for arg in node.args if not isinstance(arg, str)]
        if operands and all(is_integer(d) for d in operands) and all(c.is_integer() for c in constants):
            return widest(operands)
        return FLOAT
    if node.op in ir.LOGICAL_OPS:
        return FLOAT
    computed = held(node.dtype)
    if is_integer(computed):
        check_integer(node)
    return computed


def operand_dtypes(node: ir.Node, dtype_of: DtypeOf) -> list[str]:
    """The dtype each of `node`'s args is converted to before the node computes (a condition is a mask)."""
    computed = node_dtype(node, dtype_of)
    wanted = [computed] * len(node.args)
    if node.op == "where":
        wanted[0] = FLOAT
    if node.op == "cast" and node.dtype == "bool":  # the backend spells `!= 0` of the operand as it is held
        wanted[0] = dtype_of(node.args[0]) if isinstance(node.args[0], str) else FLOAT
    return wanted


def check_integer(node: ir.Node) -> None:
    """LoweringError unless a kernel computes `node` on integers exactly as torch does."""
    if node.op not in INTEGER_OPS:
        raise cannot_lower(f"{node.op} (on integers)")
    if node.op == "remainder" and (isinstance(node.args[1], str) or float(node.args[1]) == 0.0):
        raise cannot_lower("remainder (of integers, by anything but a non-zero constant)")
    if node.op == "clamp" and any(node.attr(key) is not None and not float(node.attr(key)).is_integer()
                                  for key in ("min", "max")):
        raise cannot_lower("clamp (of integers, with bounds that are not integers)")
