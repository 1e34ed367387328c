"""The engine as a proposer: a problem in, candidate solutions (one per tunable configuration) out.

capture -> regroup -> simplify -> the backend of the target language. A forward that one kernel cannot compute (several
GEMMs, reductions in a row, several outputs) is cut into kernels first (`partition`), each simplified and
rendered by the backend, and the kernels' files joined into one (`compose`). Where the reference computes otherwise
with its layers switched to the other mode (a batch norm), the candidates of both modes are joined into one file that
picks by the layers' `training` flags on each call (`modes`). Like the generation agent it only
writes source text (`EngineProposer` is its `kforge.proposer.Proposer`); every candidate is judged by the harness.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kforge.engine import cpp_backend, ir, modes, standalone, triton, widen
from kforge.engine.capture import Captured, LoweringError, cannot_lower, capture
from kforge.engine.compose import compose
from kforge.engine.partition import Kernel, Partition, ViewStep, partition
from kforge.engine.regroup import regroup
from kforge.engine.simplify import simplify
from kforge.engine.triton import Unsupported
from kforge.engine.triton.replay import with_replay
from kforge.engine.tune import Variant
from kforge.problem import Problem

Backend = Callable[..., list[tuple[dict[str, Any], str]]]


@dataclass(frozen=True)
class EngineCandidates:
    """The engine's answer for one problem: the program it lowered, and one candidate per configuration."""

    program: ir.Program  # after simplification (a graph program, its notes per kernel, when it was partitioned)
    variants: tuple[Variant, ...]  # the backend's default configuration first
    kernels: int = 1  # how many kernels each candidate runs in order


@dataclass(frozen=True)
class EngineRequest:
    """What the engine is asked for: up to `limit` candidates for `problem` in `language`."""

    problem: Problem
    language: str
    vendor_gemm: bool = False  # variants calling the vendor's GEMM or convolution too
    limit: int = 3


class EngineProposer:
    """The engine as a proposer (`kforge.proposer.Proposer[EngineRequest, EngineCandidates]`)."""

    def propose(self, request: EngineRequest) -> EngineCandidates:
        """Candidates for the request; LoweringError (one line for the user) when the engine cannot write any."""
        return propose(request.problem, request.language, vendor_gemm=request.vendor_gemm, limit=request.limit)


def propose(problem: Problem, language: str, vendor_gemm: bool = False, limit: int = 3) -> EngineCandidates:
    """Candidates for `problem` in `language`, each following the modes of the reference's layers (engine/modes.py);
    LoweringError (one line for the user) when it cannot write any."""
    built = capture(problem)
    found = _for_program(built.program, problem, language, vendor_gemm, limit)
    return _following_modes(found, built, problem, language, vendor_gemm, limit)


def _following_modes(found: EngineCandidates, built: Captured, problem: Problem, language: str, vendor_gemm: bool,
                     limit: int) -> EngineCandidates:
    """`found` (written for the layers' modes as built), joined with the candidates for every layer switched to the
    other mode where the reference computes otherwise there; unchanged where it computes the same."""
    forms = [modes.layer_modes(built.model)]
    others: EngineCandidates | None = None
    why = ""
    try:
        other = capture(problem, training=not built.model.training)
        if other.program == built.program:
            return found
        others = _for_program(other.program, problem, language, vendor_gemm, limit)
        forms.append(modes.layer_modes(other.model))
    except LoweringError as exc:
        why = str(exc).removeprefix("builtin engine: ").removesuffix("; configure a model with --model")
    variants = []
    for index, variant in enumerate(found.variants):
        sources = [variant.source]
        if others is not None:
            sources.append(others.variants[min(index, len(others.variants) - 1)].source)
        written = [modes.Form(flags, source) for flags, source in zip(forms, sources, strict=True)]
        variants.append(Variant(variant.config, modes.with_modes(problem.source, written, modes.refusal(written, why))))
    note = ("follows the layers' modes: " + " or ".join(modes.described(flags) for flags in forms) +
            (", picked on each call" if len(forms) > 1 else f"; refuses the other ({why})"))
    return dataclasses.replace(found, program=found.program.replace(notes=(*found.program.notes, note)),
                               variants=tuple(variants))


def _for_program(captured: ir.Program, problem: Problem, language: str, vendor_gemm: bool,
                 limit: int) -> EngineCandidates:
    """Candidates computing `captured` in `language`."""
    backend = _backend(language)
    if language == "cpp" and widen.has_half(captured):  # the C++ kernels compute in float32 (engine/widen.py)
        if captured.updates:
            raise cannot_lower("batch_norm in training mode in half precision (the C++ backend widens the "
                               "module's buffers to float32, and the running statistics must keep their dtype)",
                               op=False)
        found = _candidates(widen.widened(captured), backend, problem, vendor_gemm, limit, None)
        dtypes, single = widen.output_dtypes(captured), len(captured.returned) == 1
        return dataclasses.replace(found, variants=tuple(
            Variant(variant.config, widen.with_half_edges(variant.source, dtypes, single))
            for variant in found.variants))
    copies = triton.copies_source() if language == "triton" else None
    found = _candidates(captured, backend, problem, vendor_gemm, limit, copies)
    if language != "triton":
        return found
    return dataclasses.replace(found, variants=tuple(  # the recorded-launch forward (engine/triton/replay.py)
        Variant(variant.config, with_replay(variant.source)) for variant in found.variants))


def _candidates(captured: ir.Program, backend: Backend, problem: Problem, vendor_gemm: bool,
                limit: int, copies: str | None) -> EngineCandidates:
    """Candidates for the captured program: one kernel where one does, else the partitioned graph's kernels."""
    captured = regroup(captured)
    refusal: LoweringError | None = None
    if not captured.is_graph():
        program = simplify(captured)
        try:
            found = _rendered(backend, program, problem.source, vendor_gemm, limit)
            return EngineCandidates(program, tuple(Variant(dict(config), source) for config, source in found))
        except LoweringError as exc:
            refusal = exc
    def accepts(program: ir.Program) -> bool:
        try:
            _rendered(backend, simplify(program), problem.source, vendor_gemm, 1)
        except (LoweringError, ir.IRError):
            return False
        return True

    parts = partition(captured, accepts)
    if len(parts.kernels) < 2 and not any(isinstance(step, ViewStep) for step in parts.steps) and \
            not standalone.is_standalone(parts.kernels[0].program) and refusal:
        raise refusal  # one kernel after all: the single-kernel refusal says why
    return _composed(parts, backend, problem.source, vendor_gemm, limit, copies)


def _backend(language: str) -> Backend:
    """The renderer of single-kernel programs in `language`: its backend, or standalone kernels' writer."""
    if language not in ("cpp", "triton"):
        raise LoweringError(f"builtin engine: no backend writes {language}; use --language cpp or triton, "
                            "or configure a model with --model")
    fused = cpp_backend.variants if language == "cpp" else triton.variants

    def render(program: ir.Program, source: str, vendor_gemm: bool = False,
               limit: int = 3) -> list[tuple[dict[str, Any], str]]:
        if standalone.is_standalone(program):
            return standalone.variants(program, source, language, limit=limit)
        return fused(program, source, vendor_gemm=vendor_gemm, limit=limit)

    return render


def _rendered(backend: Backend, program: ir.Program, source: str, vendor_gemm: bool,
              limit: int) -> list[tuple[dict[str, Any], str]]:
    try:
        return backend(program, source, vendor_gemm=vendor_gemm, limit=limit)
    except Unsupported as exc:
        message = str(exc)
        if not message.startswith("builtin engine"):
            message = f"builtin engine: {message}; configure a model with --model"
        raise LoweringError(message) from None


def _composed(parts: Partition, backend: Backend, source: str, vendor_gemm: bool, limit: int,
              copies: str | None) -> EngineCandidates:
    """Candidates running `parts`' kernels in order: the k-th candidate takes each kernel's k-th configuration
    (its last, where it has fewer), so the first is every kernel's default; `copies` does the copies between
    kernels (`compose`), where the backend has them."""
    simplified = Partition(parts.graph, tuple(Kernel(simplify(step.program)) if isinstance(step, Kernel) else step
                                              for step in parts.steps))
    per_kernel = [_rendered(backend, kernel.program, source, vendor_gemm, limit) for kernel in simplified.kernels]
    views = len(simplified.steps) - len(per_kernel)
    between = f" ({views} view(s) or slice(s) between them, done in Python)" if views else ""
    notes = [f"partitioned into {len(per_kernel)} kernels: {simplified.kernels_summary()}{between}",
             *parts.graph.notes]
    notes += [f"kernel {index + 1}: {note}" for index, kernel in enumerate(simplified.kernels)
              for note in kernel.program.notes]
    doc = "\n".join(["Generated by kforge's builtin engine (no LLM): the forward as "
                     f"{len(per_kernel)} kernels run in order.", "", *notes])
    variants: list[Variant] = []
    seen: set[str] = set()
    for choice in range(max(len(found) for found in per_kernel)):
        picked = [found[min(choice, len(found) - 1)] for found in per_kernel]
        text = compose(simplified, [solution for _, solution in picked], source, doc, copies)
        if text in seen:
            continue
        seen.add(text)
        config = {f"kernel{index + 1}.{key}": value for index, (chosen, _) in enumerate(picked)
                  for key, value in chosen.items()}
        variants.append(Variant(config, text))
        if len(variants) >= limit:
            break
    return EngineCandidates(parts.graph.replace(notes=tuple(notes)), tuple(variants), kernels=len(per_kernel))
