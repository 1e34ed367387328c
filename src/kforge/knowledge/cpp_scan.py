"""Reading literal numbers out of C++/CUDA/Metal source text, without a compiler.

Good enough for the sizes validators need: `#define` and `const`/`constexpr` integer constants, shared
or threadgroup array declarations, kernel bodies and `<<<...>>>` launches. Anything that depends on a
template parameter, a run-time value or a macro with arguments is reported as unknown (None), never
guessed.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kforge import pyparse

_TYPE_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1, "uchar": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "bfloat": 2, "bfloat16_t": 2, "at::Half": 2, "at::BFloat16": 2, "c10::Half": 2, "c10::BFloat16": 2,
    "ushort": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4, "uint": 4,
    "__half2": 4, "half2": 4, "__nv_bfloat162": 4, "char4": 4, "uchar4": 4,
    "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "double": 8, "size_t": 8,
    "float2": 8, "int2": 8, "uint2": 8, "half4": 8, "long": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
}
#: Metal pads 3-vectors to the size of 4-vectors; CUDA does not
_METAL_BYTES = {"float3": 16, "int3": 16, "uint3": 16, "half3": 8, "float4": 16, "half4": 8}
_CUDA_BYTES = {"float3": 12, "int3": 12, "uint3": 12}

_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
}
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]+)$", re.MULTILINE)
_CONST = re.compile(r"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+|signed\s+|long\s+)*"
                    r"[A-Za-z_][\w:]*\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b")
_CAST = re.compile(r"\b(?:static_cast|reinterpret_cast)\s*<[^<>]*>|\((?:unsigned\s+)?(?:int|int64_t|size_t|"
                   r"unsigned|long long|long|uint32_t|int32_t)\)")
_SIZEOF = re.compile(r"\bsizeof\s*\(\s*([A-Za-z_][\w: ]*?)\s*\)")


def strip_comments(text: str) -> str:
    """`text` with comments blanked out; offsets and newlines are kept so lines still match."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.DOTALL)


def type_bytes(type_name: str, metal: bool = False) -> int | None:
    name = " ".join(type_name.replace("const", " ").replace("volatile", " ").split())
    table = {**_TYPE_BYTES, **(_METAL_BYTES if metal else _CUDA_BYTES)}
    return table.get(name)


class Constants:
    """Integer constants defined in a set of source texts; a name defined twice differently is unknown."""

    def __init__(self, texts: Iterable[str], metal: bool = False) -> None:
        self.metal = metal
        raw: dict[str, set[str]] = {}
        for text in texts:
            for pattern in (_DEFINE, _CONST):
                for name, expr in pattern.findall(text):
                    raw.setdefault(name, set()).add(expr.strip())
        self._raw = {name: next(iter(exprs)) for name, exprs in raw.items() if len(exprs) == 1}
        self._values: dict[str, int | None] = {}

    def value(self, name: str) -> int | None:
        if name not in self._values:
            self._values[name] = None  # guards against a constant defined in terms of itself
            expr = self._raw.get(name)
            self._values[name] = None if expr is None else self.evaluate(expr)
        return self._values[name]

    def evaluate(self, expr: str) -> int | None:
        """The integer value of a C expression of literals and known constants, or None."""
        text = _SIZEOF.sub(lambda m: str(type_bytes(m.group(1), self.metal) or "__unknown__"), expr)
        text = _CAST.sub(" ", text)
        text = _SUFFIX.sub(r"\1", text).replace("/", "//").strip()
        if not text:
            return None
        try:
            tree = pyparse.parse_expression(text)
        except SyntaxError:
            return None
        return self._eval(tree.body)

    def _eval(self, node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            return self.value(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self._eval(node.operand)
            return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self._eval(node.left), self._eval(node.right)
            if left is None or right is None or (right == 0 and isinstance(node.op, (ast.FloorDiv, ast.Mod))):
                return None
            return _BINARY[type(node.op)](left, right)
        return None


@dataclass(frozen=True)
class ArrayDeclaration:
    type_name: str
    name: str
    #: the text of each `[...]` dimension; empty for a scalar
    dims: tuple[str, ...]
    offset: int


def array_declarations(text: str, keyword: str) -> list[ArrayDeclaration]:
    """Declarations that follow `keyword` (`__shared__`, `threadgroup`), except `extern` (dynamic) ones.

    `__shared__ float a[32][33], b[8];` gives two declarations. A declaration whose text contains a
    parenthesis (a function parameter such as `threadgroup float* p`) is not an array and is skipped.
    """
    found = []
    statement = re.compile(rf"(?<![\w])(extern\s+)?{re.escape(keyword)}\s+([^;{{}}()]*?);")
    for match in statement.finditer(text):
        if match.group(1):
            continue
        body = re.sub(r"__align__\s*\(\s*\d+\s*\)|alignas\s*\(\s*\d+\s*\)|\bvolatile\b|\bconst\b", " ",
                      match.group(2))
        head = re.match(r"\s*((?:unsigned\s+|signed\s+|long\s+)*[A-Za-z_][\w:]*(?:\s*<[^<>]*>)?)\s+(.*)$", body,
                        re.DOTALL)
        if head is None or "*" in head.group(2) or "&" in head.group(2):
            continue
        for declarator in split_top_level(head.group(2)):
            parts = re.match(r"\s*([A-Za-z_]\w*)\s*((?:\[[^\[\]]*\]\s*)*)(?:=.*)?$", declarator, re.DOTALL)
            if parts is None:
                continue
            dims = tuple(d.strip() for d in re.findall(r"\[([^\[\]]*)\]", parts.group(2)))
            found.append(ArrayDeclaration(head.group(1).strip(), parts.group(1), dims, match.start()))
    return found


def array_bytes(declaration: ArrayDeclaration, constants: Constants) -> int | None:
    size = type_bytes(declaration.type_name, constants.metal)
    if size is None:
        return None
    for dim in declaration.dims:
        count = constants.evaluate(dim)
        if count is None:
            return None
        size *= count
    return size


@dataclass(frozen=True)
class Function:
    name: str
    start: int
    end: int


def functions(text: str, qualifier: str) -> list[Function]:
    """Bodies of functions declared with `qualifier` (`__global__`, `kernel`), found by brace matching."""
    # attributes such as __launch_bounds__(256) sit between the qualifier and the name: blank them
    text = re.sub(r"__launch_bounds__\s*\([^()]*\)|\[\[[^\]]*\]\]", lambda m: " " * len(m.group(0)), text)
    found = []
    header = re.compile(rf"(?<![\w]){re.escape(qualifier)}\b[^;{{}}]*?\b([A-Za-z_]\w*)\s*\([^;{{}}]*\)[^;{{}}]*\{{")
    for match in header.finditer(text):
        depth, position = 1, match.end()
        while depth and position < len(text):
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
        found.append(Function(match.group(1), match.start(), position))
    return found


@dataclass(frozen=True)
class Launch:
    kernel: str
    #: the arguments between <<< and >>>: grid, block, shared bytes, stream (as many as were given)
    config: tuple[str, ...]
    offset: int


def launches(text: str) -> list[Launch]:
    found = []
    for match in re.finditer(r"([A-Za-z_]\w*)\s*(?:<[^<>;]*>)?\s*<<<(.*?)>>>", text, re.DOTALL):
        found.append(Launch(match.group(1), tuple(a.strip() for a in split_top_level(match.group(2))),
                            match.start()))
    return found


def dim3_values(text: str) -> dict[str, str]:
    """`dim3 name(x, y)` / `dim3 name{x}` / `dim3 name = dim3(x)` / `dim3 name = x` -> the argument text."""
    found: dict[str, str] = {}
    for match in re.finditer(r"\bdim3\s+([A-Za-z_]\w*)\s*(?:\((.*?)\)|\{(.*?)\}|=\s*(?:dim3\s*\((.*?)\)|([^;]+)))"
                             r"\s*;", text, re.DOTALL):
        name = match.group(1)
        arguments = next(g for g in match.groups()[1:] if g is not None)
        found[name] = "?" if name in found and found[name] != arguments else arguments
    return found


def block_shape(argument: str, dim3s: dict[str, str], constants: Constants) -> tuple[int, ...] | None:
    """The block dimensions a launch's second argument asks for, or None when any is unknown."""
    argument = argument.strip()
    inline = re.fullmatch(r"dim3\s*[({](.*)[)}]", argument, re.DOTALL)
    if inline:
        argument = inline.group(1)
    elif argument in dim3s:
        argument = dim3s[argument]
    values = [constants.evaluate(part) for part in split_top_level(argument)]
    if not values or any(v is None for v in values):
        return None
    return tuple(v for v in values if v is not None)


def split_top_level(text: str) -> list[str]:
    """`text` cut at the commas outside any brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current))
    return parts
