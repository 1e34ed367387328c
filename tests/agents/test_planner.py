"""The planner: the model's order is a preference, the hard dependencies are the law; --stages parsing."""

from __future__ import annotations

import random

import pytest

from kforge.agents.analyzer import Analysis, Issue
from kforge.agents.planner import (
    HARD_DEPENDENCIES,
    PlannerAgent,
    StageSelectionError,
    enforce_order,
    must_follow,
    parse_order,
    select_stages,
)
from kforge.agents.targets import Target
from kforge.knowledge import STAGES


def obeys_dependencies(order: list[str]) -> bool:
    return all(order.index(before) < order.index(stage)
               for stage in order for before in must_follow()[stage] if before in order)


def test_dependencies_override_the_proposal() -> None:
    assert enforce_order(["autotuning", "fusion", "algorithmic"], ["fusion", "autotuning", "algorithmic"]) == [
        "algorithmic", "fusion", "autotuning"]


def test_the_proposal_stands_where_no_rule_decides() -> None:
    assert enforce_order(["dtype", "discovery"], ["discovery", "dtype"]) == ["dtype", "discovery"]
    assert enforce_order(["discovery", "dtype"], ["discovery", "dtype"]) == ["discovery", "dtype"]


def test_a_rule_holds_through_a_stage_that_does_not_run() -> None:
    # fusion -> memory_access -> block_pointers: with memory_access absent, fusion still comes first.
    assert "memory_access" in HARD_DEPENDENCIES["block_pointers"]
    assert enforce_order(["block_pointers", "fusion"], ["block_pointers", "fusion"]) == ["fusion", "block_pointers"]


def test_stages_the_model_left_out_or_invented_are_handled() -> None:
    assert enforce_order(["memory_access", "magic"], ["dtype", "memory_access", "persistent"]) == [
        "dtype", "memory_access", "persistent"]


@pytest.mark.parametrize("seed", range(20))
def test_any_proposal_of_any_subset_gives_a_valid_order(seed: int) -> None:
    rng = random.Random(seed)
    subset = rng.sample(STAGES, rng.randint(1, len(STAGES)))
    proposal = rng.sample(subset, len(subset))
    order = enforce_order(proposal, subset)
    assert sorted(order) == sorted(subset) and obeys_dependencies(order)


def test_the_dependency_table_has_no_cycle_and_names_only_stages() -> None:
    for stage, before in HARD_DEPENDENCIES.items():
        assert stage in STAGES and set(before) <= set(STAGES)
        assert stage not in must_follow()[stage]
    assert must_follow()["autotuning"] == frozenset(STAGES) - {"autotuning"}  # autotuning always comes last


def test_select_stages() -> None:
    assert select_stages(None, "triton") == STAGES
    assert "block_pointers" not in select_stages(None, "cpp")  # Triton only
    assert select_stages("memory_access, fusion", "cpp") == ("fusion", "memory_access")
    assert select_stages("-autotuning,-discovery", "triton") == tuple(
        s for s in STAGES if s not in ("autotuning", "discovery"))
    assert select_stages("Kernel fusion", "cpp") == ("fusion",)  # a title names a stage too
    with pytest.raises(StageSelectionError, match="unknown stage 'fuse'"):
        select_stages("fuse", "cpp")
    with pytest.raises(StageSelectionError, match="triton only"):
        select_stages("block_pointers", "cuda")


def test_parse_order_reads_json_or_lines_and_notes_strays() -> None:
    stages = ["fusion", "memory_access"]
    assert parse_order('{"order": ["memory_access", "fusion"], "reason": "x"}', stages) == (
        ["memory_access", "fusion"], [])
    assert parse_order('```json\n["fusion", "dtype"]\n```', stages) == (
        ["fusion"], ["the planner named 'dtype', which is not a stage to order here"])
    assert parse_order("1. memory_access: first\n2. fusion\n", stages)[0] == ["memory_access", "fusion"]


def test_one_stage_needs_no_model() -> None:
    planner = PlannerAgent(chat=None, target=Target("cpu", "cpp"))  # type: ignore[arg-type]  # never called
    plan = planner.plan(Analysis((Issue("fusion", "a"), Issue("fusion", "b"))))
    assert plan.order == ("fusion",) and plan.completion is None
    assert planner.plan(Analysis(())).order == ()


def test_the_planner_prompt_carries_issues_and_the_rules_that_apply() -> None:
    planner = PlannerAgent(chat=None, target=Target("cuda", "triton"))  # type: ignore[arg-type]
    analysis = Analysis((Issue("fusion", "fuse the epilogue", "2 launches"), Issue("autotuning", "fixed BLOCK")))
    _, user = planner.messages(analysis, ["fusion", "autotuning"])
    text = user.parts[0].text
    assert "fuse the epilogue (evidence: 2 launches)" in text and "fixed BLOCK" in text
    assert "- autotuning runs after fusion" in text and "memory_access" not in text
