"""Parsing Python source safely from several threads.

CPython 3.11 keeps the AST constructor's recursion counter in state shared by all threads, so two
`ast.parse` calls that overlap can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). kforge parses candidate replies on worker threads, so every parse goes through
one lock here.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` of a module, serialised so that concurrent callers cannot corrupt each other's parse."""
    with _LOCK:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.Expression:
    """`ast.parse(source, mode="eval")`, serialised the same way."""
    with _LOCK:
        return ast.parse(source, mode="eval")
