"""Parsing from many threads at once must not fail (CPython 3.11 shares the AST constructor's state)."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor

from kforge import pyparse

_SOURCE = "\n".join(f"def f{i}(x):\n    return [[x + {i} for _ in range(3)] for _ in range(2)]" for i in range(200))


def test_parses_from_many_threads_agree_with_a_single_parse() -> None:
    expected = ast.dump(ast.parse(_SOURCE))
    with ThreadPoolExecutor(max_workers=8) as pool:
        dumps = list(pool.map(lambda _: ast.dump(pyparse.parse(_SOURCE)), range(64)))
    assert dumps == [expected] * 64


def test_expression_mode_parses_an_expression() -> None:
    tree = pyparse.parse_expression("a * (b + 2)")
    assert isinstance(tree, ast.Expression)
    assert isinstance(tree.body, ast.BinOp)
