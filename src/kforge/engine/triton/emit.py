"""Triton spellings of the IR's pointwise ops: one line of generated code per node.

The spellings are data (`kforge/data/engine/triton/ops.toml`); this module fills them in: operands are
variables of the kernel or float literals, attributes come from the node (or torch's defaults).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from typing import Any

from kforge.engine import dtypes
from kforge.engine.capture import LoweringError
from kforge.engine.ir import Arg, Node

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

class Unsupported(LoweringError):
    """The Triton backend cannot lower this program; the message is one line saying what and why."""


@lru_cache(maxsize=1)
def op_table() -> dict[str, Any]:
    text = resources.files("kforge").joinpath("data/engine/triton/ops.toml").read_text()
    return tomllib.loads(text)


def var(name: str) -> str:
    """The kernel variable holding the value `name` (IR names may contain dots)."""
    return "v_" + re.sub(r"\W", "_", name)


def literal(value: float) -> str:
    """A float as Triton and Python both read it."""
    value = float(value)
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(value)


def spelled_expression(node: Node, args: list[str], dtype: str = dtypes.FLOAT) -> str:
    """The Triton expression of a pointwise node given its operands' spellings."""
    table = op_table()
    if node.op == "cast" and node.dtype == "bool":
        return f"tl.where({args[0]} != 0, 1.0, 0.0)"
    if node.op == "remainder":
        return _remainder(args[0], args[1], node.args[1])
    if dtypes.is_integer(dtype) and node.op in ("relu", "clamp"):
        low, high = (0.0, None) if node.op == "relu" else (node.attr("min"), node.attr("max"))
        return _clamp(args[0], low, high, integer=True)
    if node.op == "clamp":
        return _clamp(args[0], node.attr("min"), node.attr("max"))
    if node.op == "pow" and not isinstance(node.args[1], str):
        return _power(args[0], float(node.args[1]))
    if node.op in table["unary"]:
        attrs = {**table["defaults"], **{key: value for key, value in node.attrs if value is not None}}
        return table["unary"][node.op].format(*args, **{key: literal(value) for key, value in attrs.items()
                                                         if isinstance(value, (int, float))})
    if node.op in table["binary"]:
        return table["binary"][node.op].format(*args)
    if node.op in table["ternary"]:
        return table["ternary"][node.op].format(*args)
    raise Unsupported(f"the Triton backend has no spelling for {node.op!r} (node {node.name!r})")


def _clamp(value: str, low: float | None, high: float | None, integer: bool = False) -> str:
    spell: Callable[[float], str] = (lambda v: str(int(v))) if integer else literal
    if low is not None:
        value = f"tl.maximum({value}, {spell(low)})"
    if high is not None:
        value = f"tl.minimum({value}, {spell(high)})"
    return value


def _remainder(a: str, b: str, divisor: Arg) -> str:
    """torch.remainder (the sign of the divisor) from Triton's %, which (as C's) takes the dividend's sign."""
    rest = f"({a} % {b})"
    if isinstance(divisor, str):
        return f"tl.where(({rest} != 0) & (({rest} < 0) != ({b} < 0)), {rest} + {b}, {rest})"
    wrong_sign = f"{rest} < 0" if float(divisor) > 0 else f"{rest} > 0"
    return f"tl.where({wrong_sign}, {rest} + {b}, {rest})"


def _power(base: str, exponent: float) -> str:
    """Small integer and half powers spelled out (exact, and right for negative bases); others by exp/log."""
    if exponent == 0.5:
        return f"tl.sqrt({base})"
    if exponent == -1.0:
        return f"(1.0 / {base})"
    if exponent.is_integer() and 0 <= exponent <= 4:
        return "(" + " * ".join([base] * int(exponent)) + ")" if exponent else "1.0"
    return op_table()["binary"]["pow"].format(base, literal(exponent))
