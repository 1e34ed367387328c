"""The Python spellings of scalar nodes that every backend's generated forward computes before its kernels."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from kforge.engine.capture import LoweringError
from kforge.engine.expressions import python_expression
from kforge.engine.ir import Node, make_attrs


def spell(op: str, *args: object, **attrs: object) -> str:
    node = Node("s", op, args, (), attrs=make_attrs(**attrs))
    return python_expression(node, lambda arg: arg if isinstance(arg, str) else repr(arg))


def test_sizes_and_arithmetic_evaluate_to_what_torch_and_math_give() -> None:
    x = torch.empty(3, 7)
    scope = {"x": x, "a": 7.0, "b": 2.0, "math": math}
    assert eval(spell("size", "x", dim=1), scope) == 7.0
    cases = {("rsqrt", "a"): 1 / math.sqrt(7.0), ("div", "a", "b"): 3.5, ("pow", "a", "b"): 49.0,
             ("maximum", "a", 9.0): 9.0, ("log1p", "b"): math.log1p(2.0), ("square", "b"): 4.0}
    for (op, *args), expected in cases.items():
        assert eval(spell(op, *args), scope) == pytest.approx(expected), op


def test_a_scalar_op_without_a_spelling_is_one_line_for_the_user() -> None:
    with pytest.raises(LoweringError, match=r"^builtin engine: cannot compute the scalar 'cumsum' .*--model$"):
        spell("cumsum", "a")


def test_the_cpp_backend_does_not_load_the_triton_emitter() -> None:
    code = "import sys, kforge.engine.cpp_backend; print('kforge.engine.triton.emit' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "False"
