"""A candidate's source as the validators see it: the Python AST and the C++/CUDA/Metal strings inside it.

Parsed once per check and never imported or run. Strings are taken from every string literal that is
not a docstring; an f-string keeps its literal parts, with each `{...}` replaced by `?` so that a value
only known at run time stays unknown rather than guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from kforge import pyparse
from kforge.knowledge.cpp_scan import Constants, strip_comments
from kforge.knowledge.triton_scan import TritonView


@dataclass(frozen=True)
class CodeString:
    text: str
    #: line of the Python file on which the string starts
    line: int

    def line_of(self, offset: int) -> int:
        """The Python file's line for a character offset into this string."""
        return self.line + self.text.count("\n", 0, offset)


class CandidateSource:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tree: ast.Module | None = None
        self.syntax_error: tuple[str, int | None] | None = None
        try:
            self.tree = pyparse.parse(source)
        except SyntaxError as error:
            self.syntax_error = (f"the candidate does not parse as Python: {error.msg}", error.lineno)

    @cached_property
    def code_strings(self) -> list[CodeString]:
        """Every non-docstring string literal with its starting line, in source order."""
        if self.tree is None:
            return []
        docstrings = {id(node) for node in _docstring_nodes(self.tree)}
        found: list[CodeString] = []
        parts_of_fstrings: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.JoinedStr):
                pieces = []
                for value in node.values:
                    parts_of_fstrings.add(id(value))
                    text = value.value if isinstance(value, ast.Constant) else None
                    pieces.append(text if isinstance(text, str) else "?")
                found.append(CodeString("".join(pieces), node.lineno))
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and id(node) not in parts_of_fstrings):
                found.append(CodeString(node.value, node.lineno))
        return sorted(found, key=lambda s: s.line)

    def strings_containing(self, marker: str) -> list[CodeString]:
        """Code strings (comments blanked) in which `marker` occurs outside comments."""
        return [s for s in self.native_strings if marker in s.text]

    @cached_property
    def native_strings(self) -> list[CodeString]:
        """The code strings with C/C++ comments blanked out (same offsets, same lines)."""
        return [CodeString(strip_comments(s.text), s.line) for s in self.code_strings]

    @cached_property
    def cpp_constants(self) -> Constants:
        return Constants(s.text for s in self.native_strings)

    @cached_property
    def metal_constants(self) -> Constants:
        return Constants((s.text for s in self.native_strings), metal=True)

    @cached_property
    def triton(self) -> TritonView | None:
        return None if self.tree is None else TritonView(self.tree)


def _docstring_nodes(tree: ast.Module) -> list[ast.AST]:
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                found.append(first.value)
    return found
