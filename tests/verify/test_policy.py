"""Judging the operators a candidate dispatched."""

from __future__ import annotations

from kforge.verify.policy import Policy, compute_ops, judge_dispatched_ops, op_family


def test_op_family_strips_atens_decorations() -> None:
    assert op_family("aten::_native_batch_norm_legit") == "batch_norm_legit"
    assert op_family("aten::add_.Tensor") == "add"
    assert op_family("aten::mkldnn_convolution") == "convolution"


def test_structural_ops_are_not_compute() -> None:
    assert compute_ops({"aten::empty.memory_format", "aten::view", "aten::copy_", "aten::mm"}) >= {"aten::mm"}
    assert "aten::view" not in compute_ops({"aten::view"})


def test_reference_work_and_heavy_ops_are_rejected() -> None:
    reference = {"aten::mul", "aten::gt", "aten::where"}
    assert judge_dispatched_ops({"aten::where"}, reference, Policy()) is not None
    assert judge_dispatched_ops({"aten::mul_"}, reference, Policy()) is not None  # in-place form, same work
    assert judge_dispatched_ops({"aten::sum"}, reference, Policy()) is not None  # heavy, whatever the reference
    assert judge_dispatched_ops({"aten::empty", "aten::view", "aten::copy_"}, reference, Policy()) is None
    assert judge_dispatched_ops({"aten::exp"}, reference, Policy()) is None  # light and not the reference's


def test_allowances() -> None:
    reference = {"aten::addmm", "aten::relu"}
    assert judge_dispatched_ops({"aten::addmm"}, reference, Policy()) is not None
    assert judge_dispatched_ops({"aten::addmm"}, reference, Policy().allowing_vendor_gemm()) is None
    assert judge_dispatched_ops({"aten::relu"}, reference, Policy().allowing_vendor_gemm()) is not None
    assert judge_dispatched_ops({"aten::relu"}, reference, Policy(allow_ops=frozenset({"aten::relu"}))) is None
    assert judge_dispatched_ops({"aten::relu"}, reference, Policy(dynamic_checks=False)) is None


def test_vendor_gemm_covers_every_operator_matmul_reaches() -> None:
    # torch.matmul and @ dispatch aten::dot on vectors: the static check lets them through under the vendor
    # policy, so the dynamic check must too.
    vendor = Policy().allowing_vendor_gemm()
    for op in ("aten::dot", "aten::mv", "aten::mm", "aten::bmm", "aten::matmul"):
        assert judge_dispatched_ops({op}, {op}, vendor) is None, op
        assert judge_dispatched_ops({op}, {op}, Policy()) is not None, op
