"""The analyzer's reply, however the model wrote it, becomes issues by stage; whatever is dropped is noted."""

from __future__ import annotations

from kforge.agents.analyst import ProfileView
from kforge.agents.analyzer import Analysis, AnalyzerAgent, Issue, KernelView, parse_issues
from kforge.agents.targets import Target
from kforge.knowledge import STAGES

OPEN = list(STAGES)


def test_a_fenced_json_object_with_prose_around_it() -> None:
    reply = ('Here is what I see.\n```json\n{"issues": [\n'
             '  {"stage": "fusion", "issue": "two kernels where one would do", "evidence": "2 launches"},\n'
             '  {"stage": "memory_access", "issue": "strided loads", "evidence": "column-major walk"}\n]}\n```\n')
    issues, notes = parse_issues(reply, OPEN)
    assert issues == [Issue("fusion", "two kernels where one would do", "2 launches"),
                      Issue("memory_access", "strided loads", "column-major walk")]
    assert notes == []


def test_a_bare_list_with_other_key_names_and_titles_for_stages() -> None:
    reply = ('[{"category": "Kernel fusion", "description": "fuse the scale"},'
             ' {"stage": "memory-access", "problem": "no vector loads"}]')
    issues, _ = parse_issues(reply, OPEN)
    assert [(i.stage, i.issue) for i in issues] == [("fusion", "fuse the scale"),
                                                   ("memory_access", "no vector loads")]


def test_plain_lines_when_there_is_no_json() -> None:
    reply = ("Issues:\n- fusion: the epilogue is a second pass (evidence: two kernels in the profile)\n"
             "2. [autotuning] BLOCK is fixed at 1024\n* not a stage: ignored text\n")
    issues, notes = parse_issues(reply, OPEN)
    assert issues == [Issue("fusion", "the epilogue is a second pass", "two kernels in the profile"),
                      Issue("autotuning", "BLOCK is fixed at 1024")]
    assert len(notes) == 1 and "unknown stage 'not a stage'" in notes[0]


def test_unknown_and_closed_stages_are_dropped_with_a_note() -> None:
    reply = ('{"issues": [{"stage": "magic", "issue": "use magic"},'
             ' {"stage": "dtype", "issue": "use bf16"}, {"stage": "fusion", "issue": "fuse"}]}')
    issues, notes = parse_issues(reply, ["fusion"])
    assert [i.stage for i in issues] == ["fusion"]
    assert any("unknown stage 'magic'" in n and "use magic" in n for n in notes)
    assert any("stage dtype" in n and "not open" in n for n in notes)


def test_an_empty_list_means_nothing_to_do() -> None:
    issues, notes = parse_issues('{"issues": []}', OPEN)
    assert issues == [] and notes == []


def test_analysis_groups_issues_by_stage_in_the_order_named() -> None:
    analysis = Analysis((Issue("memory_access", "a"), Issue("fusion", "b"), Issue("memory_access", "c")))
    assert analysis.stages == ["memory_access", "fusion"]
    assert [i.issue for i in analysis.for_stage("memory_access")] == ["a", "c"]


def test_the_prompt_lists_the_open_stages_and_what_already_ran() -> None:
    agent = AnalyzerAgent(chat=None, target=Target("cuda", "triton"), problem_source="class Model: ...")  # type: ignore[arg-type]
    kernel = KernelView("class ModelNew: ...", 1.25, 2.5, ProfileView(text="kernel _k 90% of time"))
    system, user = agent.messages(kernel, ["fusion", "autotuning"], ["dtype: skipped"])
    text = user.parts[0].text
    assert "- fusion: kernel fusion" in text and "- autotuning:" in text and "- dtype:" not in text.split("already")[0]
    assert "dtype: skipped" in text and "kernel _k 90% of time" in text and "1.25 ms" in text
    assert "JSON" in system.parts[0].text and "Triton" in system.parts[0].text
