"""Layers' modes: a generated `ModelNew` computes what the reference computes in training and in evaluation mode.

Capture traces the reference as `Model(*get_init_inputs())` leaves it: in training mode, unless its constructor
calls `.eval()`. Some layers compute another function in the other mode (a batch norm normalizes with the batch's
statistics and moves its running statistics in training mode, with the running statistics in evaluation mode;
dropout is identity in evaluation mode only), and a forward may read `self.training` itself. So the engine captures
the reference a second time with every layer switched to the other mode; where that lowers to another program, it
writes kernels for both and `with_modes` makes one file of them: the reference's constructor once, each mode's
`ModelNew` as a class handed that one `_Reference` (so both read the same parameters and buffers), and a forward
that picks by the `training` flags of the reference's layers, read on every call as torch's layers read their own.
Flags that neither was written for (some layers switched, others not), or a mode whose kernels could not be written
(dropout in training mode), are refused in one line rather than computed wrongly.

The files are joined as `compose` joins kernels' files: each file's own top-level names suffixed `_m<i>` (its
Triton kernels, its helpers), imports and the reference's constructor once, and the C++ of both in one extension
(each file's in `namespace m<i>`), so the compiler runs once, not once per mode.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch.nn as nn

from kforge import pyparse
from kforge.engine.compose import CompositionError, Extension, held_class, joined_extension, top_level_names
from kforge.engine.construct import REFERENCE_CLASS, reference_source
from kforge.templating import template_environment

_MARKER = "\nclass ModelNew("
_EXTENSION_NAMES = {"_CPP", "_ext"}
_BINDING = re.compile(r'm\.def\("(\w+)", &([\w:]+)\);')
_MODULE_BLOCK = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"
# What the joined ModelNew calls each form it holds.
_ATTRIBUTES = {"training mode": "in_training", "evaluation mode": "in_evaluation"}


@dataclass(frozen=True)
class Form:
    """One solution file, written for the reference's layers in `modes` (each layer's `training` flag, in
    `Model.modules()` order)."""

    modes: tuple[bool, ...]
    source: str


def layer_modes(model: nn.Module) -> tuple[bool, ...]:
    """Each layer's `training` flag, in `model.modules()` order (the model itself first)."""
    return tuple(module.training for module in model.modules())


def described(modes: tuple[bool, ...]) -> str:
    """'training mode', 'evaluation mode', or (mixed) the modes the reference's constructor leaves its layers in."""
    if all(modes):
        return "training mode"
    if not any(modes):
        return "evaluation mode"
    return "the modes Model(*get_init_inputs()) leaves them in"


def with_modes(problem_source: str, forms: Sequence[Form], other_modes: str) -> str:
    """One solution file running each form's forward while the reference's layers are in its modes, and raising
    RuntimeError(`other_modes`) in any others; a single form where several cannot be joined (a file whose
    `ModelNew` has another shape, as the C++ backend's half-precision wrapper)."""
    try:
        return _joined(problem_source, forms, other_modes)
    except CompositionError:
        return _guarded(forms[0], other_modes)


def refusal(forms: Sequence[Form], why: str = "") -> str:
    """The one line a generated module raises in modes it has no kernels for; `why`: why the other mode has none."""
    if len(forms) == 1:
        return (f"this ModelNew was generated for the reference's layers in {described(forms[0].modes)} only (the "
                f"engine wrote no kernels for the other mode: {why}); put them back in that mode")
    written = " or in ".join(described(form.modes) for form in forms)
    return (f"this ModelNew was generated for the reference's layers in {written}, as a whole; some are switched and "
            "others not: call .train() or .eval() on the whole module")


@dataclass
class _Own:
    """What one form contributes: its imports, its code (renamed), and its C++ with the calls its Python makes."""

    imports: list[str] = field(default_factory=list)
    code: str = ""
    extension: Extension | None = None
    load_call: ast.Call | None = None


def _joined(problem_source: str, forms: Sequence[Form], other_modes: str) -> str:
    reference = reference_source(problem_source)
    shared = {ast.dump(statement) for statement in pyparse.parse(reference).body}
    owns = [_own_code(form.source, index, shared) for index, form in enumerate(forms)]
    imports = [line for own in owns for line in own.imports]
    codes = [f"# ---- the forward for the reference's layers in {described(form.modes)} ----\n{own.code.strip()}"
             for form, own in zip(forms, owns, strict=True)]
    extensions = [own.extension for own in owns if own.extension is not None]
    if extensions:
        if len(extensions) != len(owns) or owns[0].load_call is None:
            raise CompositionError("forms of which some have C++ and others not")
        codes.insert(0, joined_extension(extensions, owns[0].load_call, prefix="m"))
    docstring = ast.get_docstring(pyparse.parse(forms[0].source), clean=False) or "Generated by kforge's engine."
    doc = f'"""{docstring.rstrip()}\n\nIt follows the modes of the reference\'s layers: see `_MODES` below.\n"""'
    tail = _tail(forms, other_modes, joined=True)
    blocks = [doc, "\n".join(dict.fromkeys(imports)), "# ---- the reference's constructor, once: every form reads the "
              "parameters and buffers it holds (it computes nothing) ----\n" + reference.strip(), *codes, tail]
    return "\n\n\n".join(blocks) + "\n"


def _own_code(source: str, index: int, shared: set[str]) -> _Own:
    """A form's imports; the rest of its file but its docstring, the reference's constructor and its extension, with
    its own top-level names suffixed `_m<index>`, its `ModelNew` as the class `_InMode<index>`, and its calls into
    its extension made into the joined one's (`_ext.m<index>_<name>`); and its extension's C++."""
    tree = pyparse.parse(source)
    lines = source.splitlines(keepends=True)
    own = _Own()
    chunks: list[str] = []
    start = 0
    for position, statement in enumerate(tree.body):
        chunk = "".join(lines[start:statement.end_lineno])
        start = statement.end_lineno or start
        assigned = _assigned(statement)
        if position == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            own.imports.append(ast.unparse(statement))
        elif assigned == "_CPP":
            own.extension = Extension(str(ast.literal_eval(statement.value)), ())  # type: ignore[attr-defined]
        elif assigned == "_ext":
            own.load_call = statement.value  # type: ignore[attr-defined]
        elif ast.dump(statement) not in shared:
            is_model = isinstance(statement, ast.ClassDef) and statement.name == "ModelNew"
            chunks.append(held_class(chunk, f"_InMode{index}") if is_model else chunk)
    code = "".join(chunks)
    for name in sorted(top_level_names(tree, shared) - {"ModelNew"} - _EXTENSION_NAMES, key=len, reverse=True):
        code = re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"{name}_m{index}", code)
    if own.extension is not None:
        own.extension = _bound(own.extension.cpp, own.load_call)
        for name, _ in own.extension.bindings:
            code = re.sub(rf"\b_ext\.{re.escape(name)}\(", f"_ext.m{index}_{name}(", code)
    own.code = code
    return own


def _bound(cpp: str, call: ast.Call | None) -> Extension:
    """A file's C++ and the functions it binds: those `load_inline` is told to (`functions=[...]`), or, in a file
    `compose` joined, those its own `PYBIND11_MODULE` block binds (the block itself dropped)."""
    if not isinstance(call, ast.Call):
        raise CompositionError("a file with C++ but no load_inline call")
    listed = next((ast.literal_eval(keyword.value) for keyword in call.keywords if keyword.arg == "functions"), None)
    if listed:
        return Extension(cpp, tuple((str(name), str(name)) for name in listed))
    body, found, block = cpp.partition(_MODULE_BLOCK)
    if not found:
        raise CompositionError("a file's C++ binds no functions")
    return Extension(body, tuple(_BINDING.findall(block)))


def _assigned(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    return None


def _guarded(form: Form, other_modes: str) -> str:
    """The form's file, its `ModelNew` refusing any other modes than its own."""
    if form.source.count(_MARKER) != 1:
        raise CompositionError("the solution does not define ModelNew exactly once at module level")
    body = form.source.replace(_MARKER, "\nclass _InMode0(")
    return body.rstrip() + "\n\n\n" + _tail([form], other_modes, joined=False)


def _tail(forms: Sequence[Form], other_modes: str, joined: bool) -> str:
    rows = [{"flags": _flags(form.modes), "described": described(form.modes), "class_name": f"_InMode{index}",
             "attribute": _ATTRIBUTES.get(described(form.modes), "as_built")} for index, form in enumerate(forms)]
    template = template_environment("kforge", "data/engine", trim_blocks=True).get_template("modes.py.j2")
    return template.render(forms=rows, refusal=repr(other_modes), joined=joined,
                           reference_class=REFERENCE_CLASS).strip() + "\n"


def _flags(modes: tuple[bool, ...]) -> str:
    return f"({', '.join(str(flag) for flag in modes)}{',' if len(modes) == 1 else ''})"
