"""Python spellings of the IR's scalar nodes: run-time sizes and arithmetic on them and on constants.

Every backend's generated forward computes these values in Python before it calls its kernels, so the
spellings are shared; they are data (`kforge/data/engine/scalars.toml`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

from kforge.engine.capture import LoweringError
from kforge.engine.ir import Arg, Node

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

Operand = Callable[[Arg], str]


@lru_cache(maxsize=1)
def _spellings() -> dict[str, str]:
    text = resources.files("kforge").joinpath("data/engine/scalars.toml").read_text()
    return dict(tomllib.loads(text)["python"])


def python_expression(node: Node, operand: Operand) -> str:
    """The Python expression of a scalar node, its operands spelled by `operand`."""
    if node.op == "size":
        return f"float({operand(node.args[0])}.shape[{int(node.attr('dim'))}])"
    spelling = _spellings().get(node.op)
    if spelling is None:
        raise LoweringError(f"builtin engine: cannot compute the scalar {node.op!r} (node {node.name!r}) in "
                            "Python; configure a model with --model")
    return spelling.format(*(operand(arg) for arg in node.args))
