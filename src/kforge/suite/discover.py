"""Which files of the paths a user gave are problems: every `.py` defining `class Model` and `get_inputs` at
module level (solution files, which define `ModelNew`, are left out), each named by its path below the folder
it was found in."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kforge import pyparse


class SuiteError(ValueError):
    """A suite that cannot start; the message is one line for the user."""


@dataclass(frozen=True)
class FoundProblem:
    name: str  # its path below the folder it was found in (a file given alone: its file name)
    path: Path


def find_problems(paths: list[Path]) -> list[FoundProblem]:
    """The problems in `paths` (files, or folders searched recursively), in a stable order; SuiteError for a
    path that does not exist, or when none is found."""
    found: dict[str, FoundProblem] = {}
    seen: set[Path] = set()
    for given in paths:
        if given.is_file():
            candidates = [(given.name, given)]
        elif given.is_dir():
            candidates = [(str(file.relative_to(given)), file) for file in sorted(given.rglob("*.py"))]
        else:
            raise SuiteError(f"no such file or folder: {given}")
        for name, file in candidates:
            resolved = file.resolve()
            if resolved in seen or not is_problem(file):
                continue
            seen.add(resolved)
            key = name if name not in found else str(resolved)  # two folders may both hold an a.py
            found[key] = FoundProblem(key, resolved)
    if not found:
        raise SuiteError(f"no problem found in {', '.join(str(p) for p in paths)} (a problem file defines "
                         "class Model, get_inputs() and get_init_inputs())")
    return list(found.values())


def is_problem(path: Path) -> bool:
    """Whether `path` defines class Model and get_inputs at module level (read, never imported)."""
    try:
        tree = pyparse.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    names = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    return {"Model", "get_inputs"} <= names
