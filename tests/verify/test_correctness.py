"""Output comparison: structure, dtype, tolerances, non-finite values, degenerate references."""

from __future__ import annotations

import torch

from kforge.verify.correctness import Tolerance, compare, degenerate_warning, inputs_changed


def test_close_outputs_pass_and_report_errors() -> None:
    ref = torch.randn(100, 50)
    result = compare(ref, ref + 1e-6)
    assert result.ok
    assert 0 < result.max_abs_error < 2e-6
    assert result.max_rel_norm_error < 1e-5


def test_structure_shape_and_dtype_must_match() -> None:
    ref = (torch.randn(3), torch.randn(2, 2))
    assert "expected a tuple of 2" in compare(ref, (torch.randn(3),)).reason
    assert "shape (2, 3)" in compare(torch.randn(3, 2), torch.randn(2, 3)).reason
    assert "dtype torch.float64" in compare(torch.randn(3), torch.randn(3).double()).reason
    assert "[1]" in compare(ref, (ref[0], ref[1] + 1)).reason


def test_large_elementwise_error_fails_with_location() -> None:
    ref = torch.zeros(4, 4)
    out = ref.clone()
    out[2, 3] = 0.5
    result = compare(ref, out)
    assert not result.ok and "(2, 3)" in result.reason and result.max_abs_error == 0.5


def test_zeros_fail_when_every_output_is_tiny() -> None:
    ref = torch.randn(1000) * 1e-6
    assert not compare(ref, torch.zeros_like(ref)).ok
    assert degenerate_warning(ref) is not None


def test_constant_reference_is_flagged_but_not_failed() -> None:
    ref = torch.full((10,), 3.0)
    assert degenerate_warning(ref) == "the reference output is constant: any kernel returning that constant passes"
    assert compare(ref, ref.clone()).ok
    assert degenerate_warning(torch.randn(10)) is None


def test_nan_where_reference_is_finite_fails_but_matching_nan_passes() -> None:
    ref = torch.tensor([1.0, float("nan"), float("inf")])
    assert compare(ref, ref.clone()).ok
    bad = ref.clone()
    bad[0] = float("nan")
    assert "non-finite" in compare(ref, bad).reason
    assert not compare(ref, torch.tensor([1.0, 2.0, float("inf")])).ok


def test_integer_outputs_need_exact_equality() -> None:
    ref = torch.arange(10)
    assert compare(ref, ref.clone()).ok
    assert not compare(ref, ref + (ref == 3).long()).ok


def test_tolerance_override() -> None:
    ref = torch.ones(10)
    assert not compare(ref, ref + 0.01).ok
    assert compare(ref, ref + 0.01, Tolerance(atol=0.02, rtol=0.0, norm_tol=0.02)).ok


def test_inputs_changed() -> None:
    x = torch.randn(4)
    assert inputs_changed([x, 3], [x.clone(), 3]) is None
    mutated = x.clone()
    mutated[0] += 1
    assert inputs_changed([x], [mutated]) == "the candidate modified input 0 in place"
