"""How a generated `ModelNew` holds exactly the reference's parameters: it builds the reference's own `__init__`.

The harness seeds the random generator before building `Model` and again before building `ModelNew`; a
`ModelNew` whose first act is to run the reference's constructor therefore draws the same weights. The
generated source carries a copy of the problem's classes cut down to their `__init__` methods (the class
`Model` renamed `_Reference`), with the module's imports and constants, and no `forward` at all: the copy
computes nothing, so the harness's static check sees no framework compute in it.

Backends render `reference_source(problem_source)` at module level, build `_Reference(*args, **kwargs)` as
`self.reference` in `ModelNew.__init__`, and read a parameter as `param_expression("linear.weight")`.
"""

from __future__ import annotations

import ast
from typing import Any

from kforge import pyparse
from kforge.verify.policy import allowed_imports

REFERENCE_CLASS = "_Reference"
HOLDER = "self.reference"
_KEPT_METHODS = frozenset({"__init__"})


def reference_source(problem_source: str) -> str:
    """The problem's imports, constants and classes, each class reduced to its `__init__`; `Model` renamed."""
    tree = pyparse.parse(problem_source)
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if _importable(node):
                kept.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not _calls_anything(node):
            kept.append(node)
        elif isinstance(node, ast.ClassDef):
            kept.append(_constructor_only(node))
    module = ast.Module(body=kept, type_ignores=[])
    _Rename().visit(module)
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def param_expression(name: str) -> str:
    """'seq.0.weight' -> 'self.reference.seq[0].weight': a parameter or buffer read through its modules."""
    parts = [f"[{part}]" if part.isdigit() else f".{part}" for part in name.split(".")]
    return HOLDER + "".join(parts)


def _importable(node: ast.Import | ast.ImportFrom) -> bool:
    """Only modules a candidate may import (a problem's NumPy import would get the whole candidate rejected)."""
    allowed = allowed_imports()
    modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return not getattr(node, "level", 0) and all(module.split(".")[0] in allowed for module in modules)


def _calls_anything(node: ast.stmt) -> bool:
    return any(isinstance(child, ast.Call) for child in ast.walk(node))


def _constructor_only(node: ast.ClassDef) -> ast.ClassDef:
    body = [item for item in node.body if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            or item.name in _KEPT_METHODS]
    docless = [item for item in body if not (isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant))]
    fields: dict[str, Any] = {"type_params": node.type_params} if hasattr(node, "type_params") else {}  # 3.12+
    return ast.ClassDef(name=node.name, bases=node.bases, keywords=node.keywords, body=docless or [ast.Pass()],
                        decorator_list=node.decorator_list, **fields)


class _Rename(ast.NodeTransformer):
    """Model -> _Reference, in the class statement and wherever the name is read (super(Model, self))."""

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        if node.name == "Model":
            node.name = REFERENCE_CLASS
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "Model":
            node.id = REFERENCE_CLASS
        return node
