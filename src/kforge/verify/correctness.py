"""Comparing a candidate's outputs with the reference's (runs in the harness, never in the worker).

Two tests per tensor, both must pass: elementwise |out - ref| <= atol + rtol * |ref|, and the relative
norm ||out - ref|| / ||ref|| <= norm_tol. The second stops zeros or constants from passing a problem
whose outputs are all small enough to sit inside atol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    norm_tol: float


TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(atol=1e-7, rtol=1e-6, norm_tol=1e-7),
    torch.float32: Tolerance(atol=1e-4, rtol=1e-3, norm_tol=1e-4),
    torch.float16: Tolerance(atol=1e-2, rtol=1e-2, norm_tol=5e-3),
    torch.bfloat16: Tolerance(atol=2e-2, rtol=2e-2, norm_tol=1e-2),
}


def tolerance_for(dtype: torch.dtype, override: Tolerance | None = None) -> Tolerance:
    if override is not None:
        return override
    return TOLERANCES.get(dtype, Tolerance(atol=0.0, rtol=0.0, norm_tol=0.0))


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_error: float = 0.0
    max_rel_norm_error: float = 0.0

    def merged(self, other: Comparison) -> Comparison:
        first_failure = self if not self.ok else other
        return Comparison(ok=self.ok and other.ok, reason=first_failure.reason,
                          max_abs_error=max(self.max_abs_error, other.max_abs_error),
                          max_rel_norm_error=max(self.max_rel_norm_error, other.max_rel_norm_error))


def compare(reference: Any, candidate: Any, override: Tolerance | None = None, where: str = "output") -> Comparison:
    """Structure, shape, dtype and values of `candidate` against `reference`."""
    if isinstance(reference, (tuple, list)):
        if not isinstance(candidate, (tuple, list)) or len(candidate) != len(reference):
            size = f" of {len(candidate)}" if isinstance(candidate, (tuple, list)) else ""
            got = f"a {type(candidate).__name__}{size}"
            return Comparison(False, f"{where}: expected a {type(reference).__name__} of {len(reference)}, got {got}")
        result = Comparison(True)
        for index, (ref_item, cand_item) in enumerate(zip(reference, candidate, strict=True)):
            result = result.merged(compare(ref_item, cand_item, override, f"{where}[{index}]"))
        return result
    if isinstance(reference, torch.Tensor):
        if not isinstance(candidate, torch.Tensor):
            return Comparison(False, f"{where}: expected a tensor, got {type(candidate).__name__}")
        return _compare_tensors(reference, candidate, override, where)
    if isinstance(reference, (int, float, bool)) and isinstance(candidate, (int, float, bool)):
        close = abs(float(reference) - float(candidate)) <= 1e-6 * max(1.0, abs(float(reference)))
        return Comparison(close, "" if close else f"{where}: expected {reference}, got {candidate}")
    same = reference == candidate
    return Comparison(bool(same), "" if same else f"{where}: expected {reference!r}, got {candidate!r}")


def _compare_tensors(reference: torch.Tensor, candidate: torch.Tensor, override: Tolerance | None,
                     where: str) -> Comparison:
    if candidate.shape != reference.shape:
        return Comparison(False, f"{where}: shape {tuple(candidate.shape)}, expected {tuple(reference.shape)}")
    if candidate.dtype != reference.dtype:
        return Comparison(False, f"{where}: dtype {candidate.dtype}, expected {reference.dtype}")
    if reference.numel() == 0:
        return Comparison(True)
    ref = reference.detach().cpu()
    out = candidate.detach().cpu()
    if not ref.is_floating_point() and not ref.is_complex():
        mismatched = int((ref != out).sum())
        if mismatched:
            return Comparison(False, f"{where}: {mismatched} of {ref.numel()} elements differ (exact match needed)")
        return Comparison(True)
    tol = tolerance_for(reference.dtype, override)
    ref64, out64 = ref.double(), out.double()
    ref_finite, out_finite = torch.isfinite(ref64), torch.isfinite(out64)
    bad_special = (ref_finite & ~out_finite) | (~ref_finite & ~_same_special(ref64, out64))
    if bool(bad_special.any()):
        first = _index_of(bad_special, ref.shape)
        return Comparison(False, f"{where}: {int(bad_special.sum())} non-finite values where the reference has "
                          f"none or others (first at {first}: got {out64[first].item()}, "
                          f"expected {ref64[first].item()})", max_abs_error=float("inf"))
    both = ref_finite & out_finite
    diff = torch.where(both, (out64 - ref64).abs(), torch.zeros_like(ref64))
    max_abs = float(diff.max())
    ref_norm = float(torch.linalg.vector_norm(torch.where(both, ref64, 0.0)))
    diff_norm = float(torch.linalg.vector_norm(diff))
    rel_norm = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else float("inf"))
    allowed = tol.atol + tol.rtol * ref64.abs()
    over = both & (diff > allowed)
    if bool(over.any()):
        first = _index_of(over, ref.shape)
        return Comparison(False, f"{where}: {int(over.sum())} of {ref.numel()} elements out of tolerance "
                          f"(max abs error {max_abs:.3g}; first at {first}: got {out64[first].item():.6g}, "
                          f"expected {ref64[first].item():.6g}; atol {tol.atol:g}, rtol {tol.rtol:g})",
                          max_abs, rel_norm)
    if rel_norm > tol.norm_tol:
        return Comparison(False, f"{where}: relative error norm {rel_norm:.3g} exceeds {tol.norm_tol:g} "
                          f"(elementwise within atol, but the output does not follow the reference)",
                          max_abs, rel_norm)
    return Comparison(True, "", max_abs, rel_norm)


def _same_special(ref: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """True where both are NaN, or both are the same infinity."""
    return (torch.isnan(ref) & torch.isnan(out)) | (torch.isinf(ref) & (ref == out))


def _index_of(mask: torch.Tensor, shape: torch.Size) -> tuple[int, ...]:
    flat = int(mask.reshape(-1).nonzero()[0])
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) else ()


def degenerate_warning(reference: Any, override: Tolerance | None = None) -> str | None:
    """A warning when the reference's output cannot tell a real kernel from a constant."""
    leaves = reference if isinstance(reference, (tuple, list)) else [reference]
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor) or not leaf.is_floating_point() or leaf.numel() < 2:
            continue
        values = leaf.detach().double()
        tol = tolerance_for(leaf.dtype, override)
        if bool((values == values.reshape(-1)[0]).all()):
            return "the reference output is constant: any kernel returning that constant passes"
        if float(values.abs().max()) <= tol.atol:
            return (f"the reference output is entirely below atol ({tol.atol:g}): only the relative-norm test "
                    "tells a real kernel from zeros")
    return None


def inputs_changed(original: list[Any], after: list[Any]) -> str | None:
    """A description of the first input the candidate modified, or None."""
    if len(after) != len(original):
        return "the candidate changed the number of inputs"
    for index, (before, now) in enumerate(zip(original, after, strict=True)):
        if isinstance(before, torch.Tensor):
            if not isinstance(now, torch.Tensor) or now.shape != before.shape or now.dtype != before.dtype:
                return f"input {index} changed shape or type"
            if not torch.equal(torch.nan_to_num(before.cpu()), torch.nan_to_num(now.cpu())):
                return f"the candidate modified input {index} in place"
    return None
