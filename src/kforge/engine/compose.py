"""Composition: one solution file whose `ModelNew` runs a partition's kernels in order.

Each kernel of a `Partition` is rendered by its backend as a whole solution file, as for a single-kernel
problem. This module joins those files into one:

- the reference's constructor once at the top, and one `_Reference` built once by `ModelNew`, handed to every
  kernel (so every kernel reads the same parameters the harness seeded);
- each kernel's own module-level code (Triton kernels, helpers) with its names suffixed `_k<i>`, and its
  `ModelNew` as the class `_Kernel<i>`; helpers that several kernels define alike (the launcher, `_pow2`)
  once, under their own names;
- for C++, the kernels' sources joined into one extension (each in `namespace k<i>`, bound as `k<i>_<name>`),
  so the compiler runs once for the whole forward;
- `ModelNew.forward`: each step in order; views between kernels as `reshape`/`narrow` on their values, and
  the copies between them (a `cat`, a reshape no view can do) through the backend's copy kernel where it
  has one (Triton: `copies.py.j2`), else the framework's.
- then the values of the buffers the forward writes (`ir.Program.updates`: a training-mode batch norm's running
  statistics) copied into them, once every kernel reading them has run; the other outputs returned.

Intermediates are allocated by the kernel that writes them, per call (the framework's caching allocator reuses
their memory across calls of the same shape); they are never an input's storage, except where a view of an
input feeds a kernel that only reads it.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kforge import pyparse
from kforge.engine import ir
from kforge.engine.capture import cannot_lower
from kforge.engine.construct import REFERENCE_CLASS, param_expression, reference_source
from kforge.engine.cpp_backend import identifier
from kforge.engine.partition import Kernel, Partition, ViewStep


class CompositionError(RuntimeError):
    """A kernel's file does not have the shape this module expects (an internal error, not the user's)."""


@dataclass
class _Piece:
    """What one kernel's file contributes: its imports, its own code (renamed), and its C++ when it has any."""

    imports: list[str]
    code: str
    cpp: str | None = None
    functions: tuple[str, ...] = ()
    load_call: ast.Call | None = None


def compose(parts: Partition, sources: list[str], problem_source: str, doc: str, copies: str | None = None) -> str:
    """One solution file running `parts`' steps; `sources[i]` is the solution file of its i-th kernel.

    `copies`, where the backend has them, is a module defining `_cat(tensors, dim)` and `_reshape(t, shape)`:
    the copies between kernels (a `cat`, a reshape the layout cannot view) are then its kernels' work rather
    than the framework's (its names are suffixed like a kernel's where no kernel file defines them too)."""
    kernels = parts.kernels
    if len(sources) != len(kernels):
        raise CompositionError(f"{len(kernels)} kernels, {len(sources)} sources")
    if copies is not None and not any(isinstance(step, ViewStep) and step.node.op in ("cat", "view")
                                      for step in parts.steps):
        copies = None
    every = [*sources, copies] if copies is not None else sources
    reference = reference_source(problem_source)
    shared = {ast.dump(statement) for statement in pyparse.parse(reference).body}
    common = _common_helpers([pyparse.parse(source) for source in every], shared)
    emitted: set[str] = set()
    pieces = [_piece(index, source, shared, common, emitted) for index, source in enumerate(every)]
    imports = list(dict.fromkeys(line for piece in pieces for line in piece.imports))
    blocks = [f'"""{doc}\n"""', "\n".join(imports), "# ---- the reference's constructor, once: every kernel "
              "reads the parameters it holds (it computes nothing) ----\n" + reference.strip()]
    cpp = [piece for piece in pieces if piece.cpp is not None]
    if cpp:
        call = cpp[0].load_call
        assert call is not None
        blocks.append(joined_extension([Extension(piece.cpp or "", tuple((name, name) for name in piece.functions))
                                        for piece in cpp], call))
    for index, (kernel, piece) in enumerate(zip(kernels, pieces[:len(kernels)], strict=True)):
        blocks.append(f"# ---- kernel {index + 1} of {len(kernels)}: computes {kernel.output} ----\n"
                      + piece.code.strip())
    helpers = {"cat": "torch.cat", "reshape": ""}
    if copies is not None:
        blocks.append("# ---- the copies between kernels (a cat, a reshape no view can do) ----\n"
                      + pieces[-1].code.strip())
        helpers = {op: name if name in common else f"{name}_k{len(sources)}"
                   for op, name in (("cat", "_cat"), ("reshape", "_reshape"))}
    blocks.append(_model(parts, helpers))
    return "\n\n\n".join(block for block in blocks if block) + "\n"


# ---- one kernel's file ----------------------------------------------------------------------------------------

def _common_helpers(trees: list[ast.Module], shared: set[str]) -> set[str]:
    """Top-level names that two or more kernels' files define by the same statement (the launcher, `_pow2`...),
    and every file defining them defines them so, reading no name of its own that is not common too: those
    are written once, under their own names, where they first appear."""
    definitions: dict[str, set[str]] = {}
    reads: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for tree in trees:
        own = top_level_names(tree, shared) - {"ModelNew", "_CPP", "_ext"}
        for statement in tree.body:
            name = _defined_name(statement)
            if name is None or name not in own:
                continue
            definitions.setdefault(name, set()).add(ast.dump(statement))
            counts[name] = counts.get(name, 0) + 1
            reads.setdefault(name, set()).update(
                node.id for node in ast.walk(statement) if isinstance(node, ast.Name) and node.id in own)
    common = {name for name, dumps in definitions.items() if len(dumps) == 1 and counts[name] > 1}
    while True:  # a helper reading one of its file's own names that is not common is not common either
        kept = {name for name in common if reads[name] - {name} <= common}
        if kept == common:
            return common
        common = kept


def _defined_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
        return statement.name
    return _assigned_name(statement)


def _piece(index: int, source: str, shared: set[str], common: AbstractSet[str] = frozenset(),
           emitted: set[str] | None = None) -> _Piece:
    """One kernel's file: its own names suffixed `_k<index>`, except the `common` helpers, each kept only where
    it first appears (`emitted` records them across the files)."""
    tree = pyparse.parse(source)
    lines = source.splitlines(keepends=True)
    suffix = f"_k{index}"
    emitted = set() if emitted is None else emitted
    own_names = top_level_names(tree, shared) - common
    piece = _Piece(imports=[], code="")
    chunks: list[str] = []
    start = 0
    for position, statement in enumerate(tree.body):
        chunk = "".join(lines[start:statement.end_lineno])
        start = statement.end_lineno or start
        if position == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the kernel's docstring
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            piece.imports.append(ast.unparse(statement))
            continue
        if ast.dump(statement) in shared:
            continue
        defined = _defined_name(statement)
        if defined is not None and defined in common:
            if defined in emitted:
                continue
            emitted.add(defined)
        target = _assigned_name(statement)
        if target == "_CPP":
            piece.cpp = str(ast.literal_eval(statement.value))  # type: ignore[attr-defined]
            continue
        if target == "_ext":
            piece.load_call = statement.value  # type: ignore[attr-defined]
            piece.functions = _bound_functions(piece.load_call)
            continue
        if isinstance(statement, ast.ClassDef) and statement.name == "ModelNew":
            chunk = _as_kernel_class(chunk, index)
        chunks.append(chunk)
    code = "".join(chunks)
    for name in sorted(own_names - {"ModelNew", "_CPP", "_ext"}, key=len, reverse=True):
        code = re.sub(rf"(?<![\w.]){re.escape(name)}\b", name + suffix, code)
    for function in piece.functions:
        code = re.sub(rf"\b_ext\.{re.escape(function)}\(", f"_ext.k{index}_{function}(", code)
    piece.code = code
    return piece


def top_level_names(tree: ast.Module, shared: set[str]) -> set[str]:
    """The names a file's top-level statements define (functions, classes, assigned names), those among `shared`
    (statements dumped with `ast.dump`) left out."""
    names = set()
    for statement in tree.body:
        if ast.dump(statement) in shared:
            continue
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(statement.name)
        elif (target := _assigned_name(statement)) is not None:
            names.add(target)
    return names


def _assigned_name(statement: ast.stmt) -> str | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
            isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    return None


def _bound_functions(call: ast.expr) -> tuple[str, ...]:
    if not isinstance(call, ast.Call):
        raise CompositionError("_ext is not a load_inline call")
    for keyword in call.keywords:
        if keyword.arg == "functions":
            return tuple(str(name) for name in ast.literal_eval(keyword.value))
    raise CompositionError("load_inline without functions")


_HELD_CLASS_EDITS = (
    ("class ModelNew(nn.Module):", "class {name}(nn.Module):"),
    ("def __init__(self, *args, **kwargs):", "def __init__(self, reference):"),
    (f"self.reference = {REFERENCE_CLASS}(*args, **kwargs)", "self.reference = reference"),
)


def held_class(chunk: str, name: str) -> str:
    """A file's `ModelNew` class statement as the class `name`, built with a `_Reference` it is handed rather than
    one of its own (several such classes then read the same parameters); CompositionError for a class of another
    form."""
    for old, new in _HELD_CLASS_EDITS:
        if chunk.count(old) != 1:
            raise CompositionError(f"a kernel's ModelNew does not contain {old!r} once")
        chunk = chunk.replace(old, new.format(name=name))
    return chunk


def _as_kernel_class(chunk: str, index: int) -> str:
    return held_class(chunk, f"_Kernel{index}")


# ---- one C++ extension for all kernels ------------------------------------------------------------------------

@dataclass(frozen=True)
class Extension:
    """One file's C++ for a joined extension: its source without bindings, and the functions the file's Python
    calls, as (name, C++ function) pairs."""

    cpp: str
    bindings: tuple[tuple[str, str], ...]


def joined_extension(parts: list[Extension], call: ast.Call, prefix: str = "k") -> str:
    """The `_CPP` and `_ext` statements of one extension holding every part's C++, the i-th in `namespace
    <prefix><i>` with its functions bound as `<prefix><i>_<name>`, loaded as `call` (a file's `load_inline`) loads
    it, under a name of its own: the compiler runs once for them all."""
    includes: list[str] = []
    bodies: list[str] = []
    bindings: list[str] = []
    for index, part in enumerate(parts):
        space = f"{prefix}{index}"
        body = []
        for line in part.cpp.strip().splitlines():
            if line.startswith("#include"):
                includes.append(line)
            else:
                body.append(line)
        bodies.append(f"namespace {space} {{\n" + "\n".join(body).strip() + f"\n}}  // namespace {space}")
        bindings.extend(f'    m.def("{space}_{name}", &{space}::{target});' for name, target in part.bindings)
    text = "\n".join(dict.fromkeys(includes)) + "\n\n" + "\n\n".join(bodies) + \
        "\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" + "\n".join(bindings) + "\n}\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    keywords = []
    for keyword in call.keywords:
        if keyword.arg == "name":
            keyword = ast.keyword("name", ast.Constant(f"kforge_builtin_{digest}"))
        elif keyword.arg == "functions":
            keyword = ast.keyword("functions", ast.Constant(None))
        keywords.append(keyword)
    load = ast.unparse(ast.Assign([ast.Name("_ext")], ast.Call(call.func, call.args, keywords), lineno=0))
    return f'_CPP = r"""\n{text}"""\n\n{load}'


# ---- the composed module --------------------------------------------------------------------------------------

def _model(parts: Partition, helpers: dict[str, str]) -> str:
    graph = parts.graph
    inputs = {spec.name for spec in graph.inputs}
    params = {spec.name for spec in graph.params}

    def value(name: str) -> str:
        if name in params:
            return param_expression(name)
        return identifier(name) if name in inputs else f"v_{identifier(name)}"

    init = [f"        self.kernel_{index} = _Kernel{index}(self.reference)" for index in range(len(parts.kernels))]
    body = []
    index = 0
    absorbed = _absorbed_reshapes(parts)
    for step in parts.steps:
        if isinstance(step, Kernel):
            arguments = ", ".join(value(spec.name) for spec in step.program.inputs)
            body.append(f"        {value(step.output)} = self.kernel_{index}.forward({arguments})")
            index += 1
        elif step.output not in absorbed:
            body.append(f"        {value(step.output)} = {_python_step(_through(step, absorbed), value, helpers)}")
    # The buffers the forward writes (a training-mode batch norm's statistics), once every kernel reading them ran.
    for path, name in graph.written:
        body.append(f"        {param_expression(path)}.copy_({_as_shaped(value(name), graph, name, path)})")
    returned = ", ".join(value(name) for name in graph.returned)
    if len(graph.returned) > 1:
        returned = f"({returned})"
    arguments = ", ".join(identifier(spec.name) for spec in graph.inputs)
    return "\n".join([
        "class ModelNew(nn.Module):",
        "    def __init__(self, *args, **kwargs):",
        "        super().__init__()",
        f"        self.reference = {REFERENCE_CLASS}(*args, **kwargs)",
        *init,
        "",
        f"    def forward(self, {arguments}):",
        *body,
        f"        return {returned}",
    ])


def _as_shaped(expression: str, graph: ir.Program, name: str, path: str) -> str:
    """`expression` (the value `name`) reshaped to the buffer `path`'s shape where they differ: a kernel writes at
    least one element (a count of shape () is computed as one of shape (1,))."""
    shape = graph.spec(path).shape
    if graph.shape(name) == shape:
        return expression
    return f"{expression}.reshape(({', '.join(str(size) for size in shape)}{',' if len(shape) == 1 else ''}))"


def _absorbed_reshapes(parts: Partition) -> dict[str, ViewStep]:
    """The reshape steps whose value only one later reshape reads (and the forward does not return), by name:
    that reshape is done from their source instead, in one call (the elements keep their order), since every
    reshape costs the host microseconds on every call."""
    readers: dict[str, int] = {}
    for step in parts.steps:
        names = [spec.name for spec in step.program.inputs] if isinstance(step, Kernel) else \
            [str(arg) for arg in step.node.args if isinstance(arg, str)]
        for name in names:
            readers[name] = readers.get(name, 0) + 1
    reshapes = {step.output: step for step in parts.steps if isinstance(step, ViewStep) and step.node.op == "view"}
    returned = set(parts.graph.outputs)  # the values written into buffers too
    return {name: step for name, step in reshapes.items()
            if name not in returned and readers.get(name) == 1 and
            any(other.node.args[0] == name for other in reshapes.values())}


def _through(step: ViewStep, absorbed: dict[str, ViewStep]) -> ViewStep:
    """`step`, reading the source of the absorbed reshapes before it (see `_absorbed_reshapes`)."""
    if step.node.op != "view":
        return step
    source = str(step.node.args[0])
    while source in absorbed:
        source = str(absorbed[source].node.args[0])
    return ViewStep(dataclasses.replace(step.node, args=(source, *step.node.args[1:])))


def _python_step(step: ViewStep, value: Callable[[str], str], helpers: dict[str, str]) -> str:
    """The expression computing a view or a copy between kernels, from the values' Python expressions;
    `helpers` names the functions doing a `cat` and a `reshape` (the framework's where it is empty)."""
    node = step.node
    if node.op == "cat":
        return f"{helpers['cat']}([{', '.join(value(str(arg)) for arg in node.args)}], {node.attr('dim')})"
    source = value(str(node.args[0]))
    if node.op == "permute":
        return f"{source}.permute({', '.join(str(d) for d in node.attr('dims'))})"
    if node.op == "view":
        found = ir.reshape_sizes(node)
        if found is None:
            raise cannot_lower("view (with more than one varying dim, between kernels)")
        sizes = [str(size) for size in found]
        shape = f"({', '.join(sizes)}{',' if len(sizes) == 1 else ''})"
        return f"{helpers['reshape']}({source}, {shape})" if helpers["reshape"] else f"{source}.reshape({shape})"
    dim, start = node.attr("dim"), int(node.attr("start", 0))
    if len(node.args) > 1:
        raise cannot_lower("slice (ending at a run-time size, between kernels)")
    stop = node.attr("stop")
    end = f"{source}.size({dim})" if stop is None else f"min({int(stop)}, {source}.size({dim}))"
    return f"{source}.narrow({dim}, {start}, max(0, {end} - {start}))"


__all__ = ["CompositionError", "Extension", "compose", "held_class", "joined_extension", "top_level_names"]
