"""Retrieval by stage and features, within a token budget, never dropping entries silently."""

from __future__ import annotations

import pytest

from kforge.knowledge import STAGES, estimate_tokens, load_knowledge

GEMM = frozenset({"gemm", "elementwise"})


def test_estimate_tokens_is_a_quarter_of_the_characters_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_a_large_budget_includes_every_match_in_rank_order() -> None:
    base = load_knowledge("cuda", "triton")
    result = base.retrieve("fusion", GEMM, token_budget=100_000)
    assert result.omitted == []
    constraint_ids = [c.id for c in base.constraints if c.matches(GEMM)]
    assert result.entry_ids[:len(constraint_ids)] != [] and set(constraint_ids) <= set(result.entry_ids)
    severities = [c.severity for c in base.constraints if c.id in result.entry_ids]
    ordered = [next(c for c in base.constraints if c.id == i).severity for i in result.entry_ids
               if i in {c.id for c in base.constraints}]
    assert ordered == sorted(severities, key=lambda s: s != "error")
    patterns = [i for i in result.entry_ids if i in {p.id for p in base.patterns}]
    assert patterns and all(next(p for p in base.patterns if p.id == i).stage == "fusion" for i in patterns)
    examples = {e.id for e in base.examples}
    positions = [result.entry_ids.index(i) for i in result.entry_ids if i in examples]
    assert "triton-example-linear-epilogue" in result.entry_ids
    assert min(positions) > max(result.entry_ids.index(i) for i in patterns)
    for entry_id in result.entry_ids:
        assert entry_id in result.text


def test_features_filter_patterns() -> None:
    base = load_knowledge("cuda", "triton")
    gemm = base.retrieve("block_pointers", frozenset({"gemm"}), 100_000).entry_ids
    elementwise = base.retrieve("block_pointers", frozenset({"elementwise"}), 100_000).entry_ids
    assert "triton-block-pointers" in gemm and "triton-block-pointers" not in elementwise
    assert "triton-dot-precision" in gemm and "triton-dot-precision" not in elementwise


@pytest.mark.parametrize("budget", [40, 150, 300, 600, 1000, 2000])
@pytest.mark.parametrize("stage", STAGES)
def test_the_budget_is_respected_and_omissions_are_named(stage: str, budget: int) -> None:
    base = load_knowledge("cuda", "cuda")
    everything = base.retrieve(stage, GEMM, 100_000)
    result = base.retrieve(stage, GEMM, budget)
    assert estimate_tokens(result.text) <= budget
    assert result.entry_ids + result.omitted == everything.entry_ids  # a prefix is kept, the rest reported
    if result.omitted:
        last = result.text.strip().splitlines()[-1]
        assert last.startswith("[Left out for the token budget:")
        assert all(i in last for i in result.omitted) or f"{len(result.omitted)} entries" in last


def test_a_small_budget_keeps_the_errors_first() -> None:
    result = load_knowledge("cuda", "triton").retrieve("autotuning", GEMM, 200)
    assert result.entry_ids and result.omitted
    assert result.entry_ids[0] in {c.id for c in load_knowledge("cuda", "triton").constraints
                                   if c.severity == "error"}


def test_unknown_stage_and_bad_budget_are_errors() -> None:
    base = load_knowledge("cpu", "cpp")
    with pytest.raises(ValueError, match="unknown stage"):
        base.retrieve("warp_magic", GEMM)
    with pytest.raises(ValueError, match="positive"):
        base.retrieve("fusion", GEMM, 0)


def test_an_empty_base_retrieves_nothing() -> None:
    result = load_knowledge("quantum", "qasm").retrieve("fusion", GEMM)
    assert result.text == "" and result.entry_ids == [] and result.omitted == []
