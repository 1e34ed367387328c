"""Which ATen and torch names a candidate's C++/CUDA source uses, checked against an allowlist (policy.toml
[cpp_framework]; rule static.cpp-framework-call).

Why an allowlist: the dynamic check records the operators that pass through ATen's dispatcher, but a C++
candidate can call the kernels beneath it (`at::cpu::_softmax`, `at::native::mm`, `at::_ops::addmm::redispatch`,
`c10::Dispatcher`), which no recorder sees. Any list of forbidden namespaces would miss the next one, so every
qualified name under ATen's roots must be on the list, whatever its namespace.

The C++ is not parsed. It is read the way the compiler's first phases read it (lines spliced at a backslash,
comments, string and character literals removed, #include lines dropped), so that text in a comment or a message
neither fires the check nor hides code from it. Unqualified calls that C++ resolves into namespace `at` by
argument-dependent lookup (`sum(x)` for a tensor `x`) reach only functions that go through the dispatcher,
where the dynamic check sees them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from kforge.verify.policy import CppFrameworkRules, Policy, policy_rules

_RAW_STRING = re.compile(r'(?<![\w])(?:u8|u|U|L)?R"([^ ()\\\t\v\f\n]{0,16})\(')
_CHAR_LITERAL = re.compile(r"'(?:\\.|[^'\\\n]){1,10}'")
_STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"')
_INCLUDE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*include\b[^\n]*", re.MULTILINE)
_CHAR_PREFIXES = ("u8", "u", "U", "L")
# A member call: `.name(`, `->name(`, `.template name<...>(`.
_MEMBER_CALL = re.compile(r"(?:\.|->)\s*(?:template\s+)?([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(")
_CPP_LIKE = re.compile(r"[;{}]|#\s*define\b")
_DEFINE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*define[ \t]+(?P<name>\w+)(?:\((?P<parameters>[^)]*)\))?(?P<body>[^\n]*)",
                     re.MULTILINE)


@dataclass(frozen=True)
class Allowlist:
    """The names and methods a candidate's C++ may use under one policy."""

    roots: tuple[str, ...]
    names: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]
    methods: frozenset[str]

    def allows(self, name: str) -> bool:
        return name in self.names or any(pattern.fullmatch(name) for pattern in self.patterns)


def allowlist(policy: Policy) -> Allowlist:
    """The allowlist of policy.toml, with the spellings of every operator `policy` allows (the vendor's GEMM,
    `--allow-op`): `at::mm`, `torch::mm` and the method `.mm(` for aten::mm."""
    base = _base_allowlist()
    extra = {op.split("::", 1)[-1].split(".", 1)[0] for op in policy.allowed_ops}
    if not extra:
        return base
    return Allowlist(base.roots, base.names | {f"{root}::{name}" for root in ("at", "torch") for name in extra},
                     base.patterns, base.methods | extra)


@lru_cache(maxsize=1)
def _base_allowlist() -> Allowlist:
    rules: CppFrameworkRules = policy_rules().cpp_framework
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for rule in rules.allow:
        for name in rule.names:
            names.update([name] if "::" in name else [f"at::{name}", f"torch::{name}"])
        patterns.extend(re.compile(pattern) for pattern in rule.patterns)
    return Allowlist(tuple(rules.roots), frozenset(names), tuple(patterns), frozenset(rules.methods.names))


@lru_cache(maxsize=1)
def tensor_methods() -> frozenset[str]:
    """The names of torch.Tensor's methods: a member call of one of these names in C++ is taken for a tensor's
    (every compute method of at::Tensor is bound in Python under the same name)."""
    import torch

    return frozenset(name for name in dir(torch.Tensor) if not name.startswith("__"))


def code_only(source: str) -> str:
    """`source` as the compiler's first phases leave it, for reading names: lines joined where they end in a
    backslash, comments and the contents of string and character literals removed, #include lines dropped.
    Where a literal does not end as C++ requires, its text is kept (read as code), never dropped."""
    text = source.replace("\\\r\n", "").replace("\\\n", "")
    out: list[str] = []
    i, length = 0, len(text)
    while i < length:
        char = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = length if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = length if end < 0 else end + 2
            continue
        raw = _RAW_STRING.match(text, i) if char in "RuUL" else None
        if raw is not None:
            end = text.find(")" + raw.group(1) + '"', raw.end())
            if end >= 0:
                out.append('""')
                i = end + len(raw.group(1)) + 2
                continue
        if char == '"':
            literal = _STRING_LITERAL.match(text, i)
            if literal is not None:
                out.append('""')
                i = literal.end()
                continue
        if char == "'" and _starts_char_literal(text, i):
            literal = _CHAR_LITERAL.match(text, i)
            if literal is not None:
                out.append("''")
                i = literal.end()
                continue
        out.append(char)
        i += 1
    return _INCLUDE.sub("", "".join(out))


def _starts_char_literal(text: str, index: int) -> bool:
    """Whether the quote at `index` opens a character literal rather than separating digits (1'000'000)."""
    before = re.search(r"[\w]*$", text[max(0, index - 8):index])
    word = before.group(0) if before else ""
    return word == "" or word in _CHAR_PREFIXES


def framework_names(source: str, allowed: Allowlist, cpp_like: bool | None = None) -> list[str]:
    """What in the C++ `source` breaks the allowlist, one phrase each ("at::cpu::_softmax", "the method .sum()",
    ...), in order of appearance and without repeats. `cpp_like` says whether `source` is C++ for certain; when
    None it is decided from the text (a `;`, brace or #define outside comments and literals): token pasting, which
    a Markdown heading could look like, is refused in C++ only."""
    code = code_only(source)
    if cpp_like is None:
        cpp_like = bool(_CPP_LIKE.search(code))
    found = [*_qualified(code, allowed), *_members(code, allowed), *_spelled_around(code, allowed.roots, cpp_like)]
    return list(dict.fromkeys(phrase for _, phrase in sorted(found, key=lambda item: item[0])))


def _qualified(code: str, allowed: Allowlist) -> Iterator[tuple[int, str]]:
    """Every qualified name under a root (`at::cpu::_softmax`, `::torch :: matmul`, `at::cpu` alone) that the
    allowlist does not hold, written without spaces or `template` keywords."""
    roots = "|".join(map(re.escape, allowed.roots))
    part = r"(?:template\s+)?~?\w+"
    pattern = re.compile(rf"(?<![\w.])(?<!->)(?:{roots})\s*::\s*(?:{part}(?:\s*::\s*{part})*)?")
    for match in pattern.finditer(code):
        name = "::".join(word for word in re.findall(r"~?\w+", match.group(0)) if word != "template")
        if not allowed.allows(name):
            yield match.start(), name


def _members(code: str, allowed: Allowlist) -> Iterator[tuple[int, str]]:
    methods = tensor_methods()
    for match in _MEMBER_CALL.finditer(code):
        name = match.group(1)
        if name in methods and name not in allowed.methods:
            yield match.start(), f"the tensor method .{name}()"


def _spelled_around(code: str, roots: Iterable[str], cpp_like: bool) -> Iterator[tuple[int, str]]:
    """Ways to reach a root's names without writing them out qualified: reopening a root namespace (names inside
    it need no qualifier), aliasing it, `using namespace` of it, a macro whose body names it or uses a parameter
    as a namespace (`#define Q(ns) ns::cpu::f` then `Q(at)`), and token pasting, which can spell one. A variable
    that happens to be called `at` is none of these."""
    root = "(?:" + "|".join(map(re.escape, roots)) + ")"
    for pattern, what in ((rf"\bnamespace\s+{root}\b", "reopens the namespace"),
                          (rf"\bnamespace\s+\w+\s*=\s*(?:::\s*)?{root}\b", "aliases the namespace"),
                          (rf"\busing\s+namespace\s+(?:::\s*)?{root}\b", "uses the namespace")):
        for match in re.finditer(pattern, code):
            if what.startswith("reopens") and re.search(r"\busing\s*$", code[max(0, match.start() - 40):match.start()]):
                continue  # `using namespace at`: the next pattern's
            yield match.start(), f"{what} {match.group(0).split()[-1].lstrip(':=')}"
    for match in _DEFINE.finditer(code):
        body = match.group("body")
        parameters = [name.strip() for name in (match.group("parameters") or "").split(",") if name.strip()]
        if re.search(rf"(?<![\w.])(?<!->){root}\b", body):
            yield match.start(), f"a macro naming the namespace ({match.group('name')})"
        elif any(re.search(rf"\b{re.escape(name)}\s*::", body) for name in parameters if name != "..."):
            yield match.start(), f"a macro parameter used as a namespace ({match.group('name')})"
    if cpp_like:
        for match in re.finditer(r"##|%:%:", code):
            yield match.start(), "token pasting (##)"
