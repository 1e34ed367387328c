"""Teaching an exported solution to load the extensions built for this machine.

The exported file stays the solution the harness judged, with two changes: a block near its top that defines
`_kforge_load_inline`, and every `load_inline(...)` call spelled `_kforge_load_inline(...)`. The block names a
build exactly as kforge's build cache does (it carries the source of `verify/extension_cache.py`'s functions)
and loads `build/<folder>/<name>.so` beside the file when the folder's manifest describes this machine;
otherwise it calls torch's `load_inline`, which compiles as it always would.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from kforge import pyparse
from kforge.templating import template_environment
from kforge.verify import extension_cache

LOADER_NAME = "_kforge_load_inline"
# The functions of extension_cache the loader carries, in an order where each is defined before it is called.
_CARRIED = (extension_cache.target_architectures, extension_cache.build_key, extension_cache.build_folder_name,
            extension_cache.library_file, extension_cache.machine_identity)


def loader_block() -> str:
    """The Python block an exported solution starts with (after its docstring and `__future__` imports)."""
    helpers = "\n\n".join(textwrap.indent(inspect.getsource(function), "    ") for function in _CARRIED)
    template = template_environment("kforge", "data/export").get_template("prebuilt_loader.py.j2")
    return template.render(helpers=helpers + "\n", not_in_key=repr(extension_cache._NOT_IN_KEY))


def calls_load_inline(source: str) -> bool:
    """Whether the solution calls `load_inline` (by that name or as an attribute)."""
    return bool(_load_inline_calls(pyparse.parse(source)))


def with_prebuilt_loader(source: str) -> str:
    """`source` with the loader block added and its `load_inline(...)` calls going through it; unchanged when it
    calls no `load_inline`."""
    tree = pyparse.parse(source)
    calls = _load_inline_calls(tree)
    if not calls:
        return source
    lines = source.splitlines(keepends=True)
    for call in sorted(calls, key=lambda c: (c.func.lineno, c.func.col_offset), reverse=True):
        func = call.func
        assert func.end_lineno is not None and func.end_col_offset is not None
        first, last = lines[func.lineno - 1], lines[func.end_lineno - 1]
        lines[func.lineno - 1:func.end_lineno] = [
            _prefix(first, func.col_offset) + LOADER_NAME + _suffix(last, func.end_col_offset)]
    at = _insertion_line(tree)
    return "".join(lines[:at]) + ("\n" if at else "") + loader_block() + "\n\n" + "".join(lines[at:])


def _load_inline_calls(tree: ast.Module) -> list[ast.Call]:
    def named_load_inline(func: ast.expr) -> bool:
        return (isinstance(func, ast.Name) and func.id == "load_inline") or \
            (isinstance(func, ast.Attribute) and func.attr == "load_inline")

    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and named_load_inline(node.func)]


def _insertion_line(tree: ast.Module) -> int:
    """The number of lines before the loader block: the module's docstring and `__future__` imports."""
    end = 0
    for statement in tree.body:
        docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
            and isinstance(statement.value.value, str) and end == 0
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        if not (docstring or future):
            break
        end = statement.end_lineno or end
    return end


def _prefix(line: str, column: int) -> str:
    """The text of `line` before UTF-8 byte offset `column` (the offsets ast gives)."""
    return line.encode()[:column].decode()


def _suffix(line: str, column: int) -> str:
    return line.encode()[column:].decode()
