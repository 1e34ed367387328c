"""Pulling a solution file out of a model's reply, however it was written.

Models answer with prose around code, several code blocks (a C++ block and a Python block, say), no fences
at all, or a reply cut off mid-way by the token limit. The solution is the Python block that defines
`ModelNew`; when the reply was cut, the message says so, so the model can be asked again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kforge import pyparse

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+#.-]*)[^\n]*$", re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3"}


class ReplyError(ValueError):
    """No usable solution in the reply; the message says why, for the model to read."""


@dataclass(frozen=True)
class CodeBlock:
    language: str
    code: str
    closed: bool


def code_blocks(reply: str) -> list[CodeBlock]:
    """Fenced blocks in order; an unclosed last block runs to the end of the reply."""
    blocks: list[CodeBlock] = []
    position = 0
    while True:
        opening = _FENCE.search(reply, position)
        if opening is None:
            return blocks
        fence, language = opening.group(1), opening.group(2).lower()
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(reply, opening.end())
        if end is None:
            blocks.append(CodeBlock(language, reply[opening.end():].strip("\n"), closed=False))
            return blocks
        blocks.append(CodeBlock(language, reply[opening.end():end.start()].strip("\n"), closed=True))
        position = end.end()


def extract_solution(reply: str) -> str:
    """The solution's Python source; ReplyError when there is none."""
    blocks = code_blocks(reply)
    candidates = [b for b in blocks if b.language in _PYTHON_TAGS and "ModelNew" in b.code]
    if not candidates and not blocks:
        candidates = [CodeBlock("python", _strip_prose(reply), closed=True)]
    if not candidates:
        raise ReplyError("the reply has no Python code block defining class ModelNew")
    block = candidates[-1]
    try:
        tree = pyparse.parse(block.code)
    except SyntaxError as exc:
        if not block.closed:
            raise ReplyError(f"the reply was cut off before the code ended (the code stops parsing at line "
                             f"{exc.lineno}); answer with a shorter, complete file") from None
        raise ReplyError(f"the code is not valid Python: {exc.msg} (line {exc.lineno})") from None
    if not any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body):
        raise ReplyError("the code does not define class ModelNew at module level")
    return block.code.rstrip() + "\n"


def _strip_prose(reply: str) -> str:
    """An unfenced reply: drop leading prose up to the first line that starts Python code."""
    lines = reply.strip().splitlines()
    for index, line in enumerate(lines):
        if line.startswith(("import ", "from ", '"""', "class ", "#")):
            return "\n".join(lines[index:])
    return reply
