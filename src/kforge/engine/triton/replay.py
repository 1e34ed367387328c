"""Replay for a generated Triton forward: each kind of call's launches recorded once, then issued directly.

On a GPU host a small forward's time is mostly the host's: each kernel's Python (shapes, layouts, grids, the
launcher's key) costs microseconds on every call, for values that only change when the inputs' shapes,
strides, dtypes or alignment do. `with_replay` adds to a rendered solution (single-kernel or composed) a
`forward` that records the first call of each kind (the launches through `_Direct` and the memory the
forward allocated) and, for later calls of that kind, allocates the outputs and issues the recorded launches
with this call's pointers: every kernel still runs on every call, on the caller's stream; intermediates are
reused by the calls of their kind; outputs are new every call. The generated code (`replay.py.j2`) refuses to
record a call that any framework operator computed part of, so replay never skips work.

A solution this cannot make safe is returned unchanged: one that writes tensors in place from Python, reads
device values on the host (`.item()`), or has no launches through `_Direct`.
"""

from __future__ import annotations

import ast
import re

from kforge import pyparse
from kforge.templating import template_environment

_ALLOCATING_METHODS = {"new_empty", "new_empty_strided"}
_ALLOCATING_FUNCTIONS = {"torch.empty", "torch.empty_like", "torch.empty_strided"}
_HOST_READS = {"item", "tolist", "cpu", "numpy", "nonzero"}
_IN_PLACE_ALLOWED = {"requires_grad_"}


def with_replay(source: str) -> str:
    """`source` with the recorded-launch forward; `source` itself where that cannot be made safe."""
    tree = pyparse.parse(source)
    model = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "ModelNew"), None)
    if model is None or not _safe(tree):
        return source
    methods = {node.name: node for node in model.body if isinstance(node, ast.FunctionDef)}
    forward, init = methods.get("forward"), methods.get("__init__")
    names = _helper_names(tree)
    kernels = _launched(tree)
    if forward is None or init is None or not kernels or not all(names.values()) or not _plain(forward):
        return source
    super_init = next((statement for statement in init.body if "super().__init__" in ast.unparse(statement)), None)
    if super_init is None:
        return source
    lines = source.splitlines(keepends=True)
    edits = _allocation_edits(tree)
    arguments = [arg.arg for arg in forward.args.args[1:]]
    pad = " " * forward.col_offset
    body_pad = pad + "    "
    edits.append((forward.lineno, forward.col_offset, forward.lineno, forward.col_offset + len("def forward"),
                  "def _forward"))
    call = f"self._plans.call(self, ({', '.join(arguments)}{',' if len(arguments) == 1 else ''}))"
    first = forward.decorator_list[0].lineno if forward.decorator_list else forward.lineno
    new_forward = (f"{pad}def forward(self, {', '.join(arguments)}):\n"
                   f"{body_pad}# the recorded launches where this kind of call has been seen (see `_Plans`)\n"
                   f"{body_pad}return {call}\n\n")
    inserts = [(first, new_forward)]
    init_pad = " " * super_init.col_offset
    inserts.append(((super_init.end_lineno or super_init.lineno) + 1, f"{init_pad}self._plans = _Plans()\n"))
    apply = methods.get("_apply")
    if apply is not None:
        first_line = apply.body[0]
        inserts.append((first_line.lineno,
                        f"{' ' * first_line.col_offset}self._plans = _Plans()  # moved or converted: recorded anew\n"))
    else:
        inserts.append((model.end_lineno + 1 if model.end_lineno else len(lines) + 1, _apply_method(pad, body_pad)))
    text = _applied(lines, edits, inserts)
    appendix = template_environment("kforge", "data/engine/triton").get_template("replay.py.j2").render(
        kernels=kernels, **names)
    return text.rstrip("\n") + "\n" + appendix


def _apply_method(pad: str, body_pad: str) -> str:
    return (f"\n{pad}def _apply(self, fn, *args, **kwargs):\n"
            f"{body_pad}self._plans = _Plans()  # moved or converted: its calls are recorded anew\n"
            f"{body_pad}return super()._apply(fn, *args, **kwargs)\n")


def _safe(tree: ast.Module) -> bool:
    """Whether no host code writes a tensor in place or reads device values (which replay would not redo).

    Constructors (run once, not per call) and the launcher class (`_Direct`, whose dict of compiled kernels is
    written by subscript) are not read."""
    for node in _per_call_nodes(tree):
        if isinstance(node, ast.Call):
            if any(keyword.arg == "out" for keyword in node.keywords):
                return False
            if isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if attr in _HOST_READS or (attr.endswith("_") and not attr.startswith("__")
                                           and attr not in _IN_PLACE_ALLOWED):
                    return False
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Subscript) for target in targets):
                return False
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            return False
    return True


def _per_call_nodes(tree: ast.Module) -> list[ast.AST]:
    """The module's nodes outside constructors and the launcher class."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if (isinstance(node, ast.FunctionDef) and node.name == "__init__") or \
                (isinstance(node, ast.ClassDef) and re.fullmatch(r"_Direct(_k\d+)?", node.name)):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _plain(forward: ast.FunctionDef) -> bool:
    """Whether `forward` takes only plain positional arguments (what the recorded call is keyed by)."""
    args = forward.args
    return not (args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs) and \
        len(args.args) >= 1


def _helper_names(tree: ast.Module) -> dict[str, list[str] | str]:
    """The (possibly suffixed, in a composed file) names of the launcher's tape, class and hook test."""
    tapes, directs, hooked = [], [], []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Name) and re.fullmatch(r"_TAPE(_k\d+)?", statement.targets[0].id):
            tapes.append(statement.targets[0].id)
        elif isinstance(statement, ast.ClassDef) and re.fullmatch(r"_Direct(_k\d+)?", statement.name):
            directs.append(statement.name)
        elif isinstance(statement, ast.FunctionDef) and re.fullmatch(r"_hooked(_k\d+)?", statement.name):
            hooked.append(statement.name)
    return {"tapes": tapes, "directs": directs, "hooked": hooked[0] if hooked else ""}


def _launched(tree: ast.Module) -> list[str]:
    """The module-level names launched as `kernel[grid](...)`, in order of first launch."""
    names: list[str] = []
    defined = {name for statement in tree.body for name in _module_names(statement)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in defined and \
                node.func.value.id not in names:
            names.append(node.func.value.id)
    return names


def _module_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [target.id for target in statement.targets if isinstance(target, ast.Name)]
    return []


def _allocation_edits(tree: ast.Module) -> list[tuple[int, int, int, int, str | None]]:
    """Wrappings of each allocation inside a function in `_fresh(...)` (as (start, end) positions)."""
    edits: list[tuple[int, int, int, int, str | None]] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or function.name == "__init__":
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and _allocates(node) and node.end_lineno is not None and \
                    node.end_col_offset is not None:
                edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, None))
    unique = sorted(set(edits))
    outermost = [edit for edit in unique if not any(other != edit and _within(edit, other) for other in unique)]
    return outermost


def _within(inner: tuple[int, int, int, int, str | None], outer: tuple[int, int, int, int, str | None]) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (outer[2], outer[3])


def _allocates(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _ALLOCATING_METHODS:
        return True
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
        f"{func.value.id}.{func.attr}" in _ALLOCATING_FUNCTIONS


def _applied(lines: list[str], edits: list[tuple[int, int, int, int, str | None]],
             inserts: list[tuple[int, str]]) -> str:
    """`lines` with each span edited (None: wrapped in `_fresh(...)`; else replaced) and the lines inserted
    before the given (1-based) line numbers."""
    lines = list(lines)
    for start_line, start_col, end_line, end_col, replacement in sorted(edits, reverse=True):
        # columns are byte offsets in UTF-8; the generated code is ASCII
        if replacement is None:
            last = lines[end_line - 1]
            lines[end_line - 1] = last[:end_col] + ")" + last[end_col:]
            first = lines[start_line - 1]
            lines[start_line - 1] = first[:start_col] + "_fresh(" + first[start_col:]
        else:
            first = lines[start_line - 1]
            lines[start_line - 1] = first[:start_col] + replacement + first[end_col:]
    for line_number, text in sorted(inserts, key=lambda insert: insert[0], reverse=True):
        lines.insert(line_number - 1, text)
    return "".join(lines)
