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


def test_the_vendor_gemm_choice_is_one_field_of_the_policy() -> None:
    from kforge.verify.policy import policy_rules

    strict = Policy()
    vendor = strict.allowing_vendor_gemm()
    assert vendor.vendor_gemm and not strict.vendor_gemm
    assert policy_rules().aten.vendor_gemm <= vendor.allowed_ops and not strict.allowed_ops
    assert vendor.vendor_gemm_passes and not strict.vendor_gemm_passes
    assert Policy(dynamic_checks=False).vendor_gemm_passes  # nothing judges the dispatched operators
    conv = {"aten::convolution", "aten::mkldnn_convolution"} & set(policy_rules().aten.vendor_gemm)
    assert conv and judge_dispatched_ops(conv, set(), vendor) is None
    assert judge_dispatched_ops(conv, set(), strict) is not None


def test_rule_help_has_a_line_for_every_rule_the_checks_fire() -> None:
    from kforge.verify.policy import policy_rules, rule_help

    fired = set(policy_rules().imports.rules) | set(policy_rules().cpp)
    assert all(rule_help(rule) for rule in fired)
    assert rule_help(None) == "" and rule_help("no.such-rule") == ""
