"""The engine as a proposer: a problem in, candidate solutions (one per tunable configuration) out.

capture -> simplify -> the backend of the target language. Like the generation agent it only writes
source text; every candidate is judged by the harness.
"""

from __future__ import annotations

from dataclasses import dataclass

from kforge.engine import cpp_backend, ir, triton_backend
from kforge.engine.capture import LoweringError, capture
from kforge.engine.simplify import simplify
from kforge.engine.triton_emit import Unsupported
from kforge.engine.tune import Variant
from kforge.problem import Problem


@dataclass(frozen=True)
class EngineCandidates:
    """The engine's answer for one problem: the program it lowered, and one candidate per configuration."""

    program: ir.Program  # after simplification
    variants: tuple[Variant, ...]  # the backend's default configuration first


def propose(problem: Problem, language: str, vendor_gemm: bool = False, limit: int = 3) -> EngineCandidates:
    """Candidates for `problem` in `language`; LoweringError (one line for the user) when it cannot."""
    program = simplify(capture(problem).program)
    try:
        if language == "cpp":
            found = cpp_backend.variants(program, problem.source, vendor_gemm=vendor_gemm, limit=limit)
        elif language == "triton":
            found = triton_backend.variants(program, problem.source, vendor_gemm=vendor_gemm, limit=limit)
        else:
            raise LoweringError(f"builtin engine: no backend writes {language}; use --language cpp or triton, "
                                "or configure a model with --model")
    except Unsupported as exc:
        message = str(exc)
        if not message.startswith("builtin engine"):
            message = f"builtin engine: {message}; configure a model with --model"
        raise LoweringError(message) from None
    return EngineCandidates(program, tuple(Variant(dict(config), source) for config, source in found))
