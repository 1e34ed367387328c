"""The no-delegation policy: what a candidate may run, and the judgement of the operators it dispatched.

The rules themselves are data (`kforge/data/policy.toml`); the static half lives in `static_check.py`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@lru_cache(maxsize=1)
def policy_data() -> dict[str, Any]:
    text = resources.files("kforge").joinpath("data/policy.toml").read_text()
    return tomllib.loads(text)


class Policy(BaseModel):
    """Which checks run and what they allow. The default is the strictest useful setting."""

    model_config = ConfigDict(frozen=True)

    static_checks: bool = True
    dynamic_checks: bool = True
    allow_ops: frozenset[str] = frozenset()
    allow_imports: frozenset[str] = frozenset()

    def allowing_vendor_gemm(self) -> Policy:
        """The same policy, with the vendor's GEMM and convolution allowed (cuBLAS, oneDNN, cuDNN)."""
        return self.model_copy(update={"allow_ops": self.allow_ops | set(policy_data()["aten"]["vendor_gemm"])})


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
    structural = set(policy_data()["aten"]["structural"])
    return {op for op in ops if op not in structural and not op.startswith("profiler::")}


def judge_dispatched_ops(candidate_ops: set[str], reference_ops: set[str], policy: Policy) -> Violation | None:
    """Reject a candidate that ran, through the framework, the reference's work or any heavy operator."""
    if not policy.dynamic_checks:
        return None
    heavy = set(policy_data()["aten"]["heavy"])
    reference_work = compute_ops(reference_ops)
    reference_families = {op_family(op) for op in reference_work}
    offending = sorted(
        op for op in compute_ops(candidate_ops) - policy.allow_ops
        if op in heavy or op in reference_work or op_family(op) in reference_families
    )
    if not offending:
        return None
    listed = ", ".join(offending[:6]) + (" ..." if len(offending) > 6 else "")
    return Violation("dynamic.framework-op",
                     f"the candidate ran PyTorch operators that do the problem's work: {listed}")
