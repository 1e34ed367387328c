"""The no-delegation policy: what a candidate may run, and the judgement of the operators it dispatched.

The rules themselves are data (`kforge/data/policy.toml`); the static half lives in `static_check.py`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class _Rules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImportRules(_Rules):
    allowed: frozenset[str]  # top-level modules a candidate may import
    rules: dict[str, tuple[str, ...]]  # rule -> modules whose import fires it


class TorchRules(_Rules):
    compiler_modules: tuple[str, ...]
    private_modules: tuple[str, ...]
    concurrency_modules: tuple[str, ...]
    allowed_callables: frozenset[str]
    holder_layers: frozenset[str]


class AtenRules(_Rules):
    structural: frozenset[str]  # operators that move, allocate or view data
    heavy: frozenset[str]  # operators never allowed unless the policy says so
    vendor_gemm: frozenset[str]  # the vendor's GEMM and convolution, allowed under Policy.vendor_gemm


class OsRules(_Rules):
    allowed: frozenset[str]
    process: frozenset[str]
    concurrency: frozenset[str]


class SysRules(_Rules):
    allowed: frozenset[str]


class BuiltinRules(_Rules):
    dynamic: frozenset[str]
    io: frozenset[str]
    by_name: frozenset[str]


class CppAllowRule(_Rules):
    names: tuple[str, ...] = ()  # without `::`: at::NAME and torch::NAME; with `::`: exactly as written
    patterns: tuple[str, ...] = ()  # regular expressions a whole qualified name must match
    why: str


class CppMethodRules(_Rules):
    names: frozenset[str]
    why: str


class CppFrameworkRules(_Rules):
    """Which ATen and torch names a candidate's C++ may use (static.cpp-framework-call)."""

    roots: tuple[str, ...]  # the namespaces whose qualified names are checked
    allow: tuple[CppAllowRule, ...]
    methods: CppMethodRules


class PolicyRules(_Rules):
    """`data/policy.toml`, read once (`policy_rules()`); every check of the policy reads it from here."""

    imports: ImportRules
    torch: TorchRules
    aten: AtenRules
    aliases: dict[str, tuple[str, ...]]  # Python spellings -> the operator families they reach
    os: OsRules
    sys: SysRules
    builtins: BuiltinRules
    cpp: dict[str, tuple[str, ...]]  # rule -> patterns rejected in C++/CUDA source strings
    cpp_framework: CppFrameworkRules
    rule_help: dict[str, str]  # rule -> one line for users and models


@lru_cache(maxsize=1)
def policy_rules() -> PolicyRules:
    text = resources.files("kforge").joinpath("data/policy.toml").read_text()
    return PolicyRules.model_validate(tomllib.loads(text))


def rule_help(rule: str | None) -> str:
    """The one line that tells a user (or a model) what to do about `rule`; empty for an unknown rule."""
    return policy_rules().rule_help.get(rule or "", "")


def allowed_imports() -> frozenset[str]:
    """The top-level modules a candidate may import under the default policy."""
    return policy_rules().imports.allowed


class Policy(BaseModel):
    """Which checks run and what they allow. The default is the strictest useful setting."""

    model_config = ConfigDict(frozen=True)

    static_checks: bool = True
    dynamic_checks: bool = True
    vendor_gemm: bool = False  # the candidate may call the vendor's GEMM and convolution (cuBLAS, oneDNN, cuDNN)
    allow_ops: frozenset[str] = frozenset()  # operators allowed one by one (kforge eval --allow-op)
    allow_imports: frozenset[str] = frozenset()

    def allowing_vendor_gemm(self) -> Policy:
        """The same policy, with the vendor's GEMM and convolution allowed."""
        return self.model_copy(update={"vendor_gemm": True})

    @property
    def allowed_ops(self) -> frozenset[str]:
        """Every operator this policy lets a candidate run beyond the structural ones."""
        return self.allow_ops | (policy_rules().aten.vendor_gemm if self.vendor_gemm else frozenset())

    @property
    def vendor_gemm_passes(self) -> bool:
        """Whether a candidate calling the vendor's GEMM passes this policy (allowed, or not checked)."""
        return self.vendor_gemm or not self.dynamic_checks


@dataclass(frozen=True)
class Violation:
    """A policy rule that fired, and where."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} [{self.rule}]"


def op_family(op: str) -> str:
    """'aten::_native_batch_norm_legit' -> 'batch_norm_legit': the name stripped of ATen's decorations."""
    name = op.split("::", 1)[-1].split(".", 1)[0]
    name = name.lstrip("_")
    for prefix in ("native_", "mkldnn_", "cudnn_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.rstrip("_")


def compute_ops(ops: set[str]) -> set[str]:
    """The operators in `ops` that compute on tensor data (everything not merely structural)."""
    structural = policy_rules().aten.structural
    return {op for op in ops if op not in structural and not op.startswith("profiler::")}


def judge_dispatched_ops(candidate_ops: set[str], reference_ops: set[str], policy: Policy) -> Violation | None:
    """Reject a candidate that ran, through the framework, the reference's work or any heavy operator."""
    if not policy.dynamic_checks:
        return None
    heavy = policy_rules().aten.heavy
    reference_work = compute_ops(reference_ops)
    reference_families = {op_family(op) for op in reference_work}
    offending = sorted(
        op for op in compute_ops(candidate_ops) - policy.allowed_ops
        if op in heavy or op in reference_work or op_family(op) in reference_families
    )
    if not offending:
        return None
    listed = ", ".join(offending[:6]) + (" ..." if len(offending) > 6 else "")
    return Violation("dynamic.framework-op",
                     f"the candidate ran PyTorch operators that do the problem's work: {listed}")
