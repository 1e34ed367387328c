"""Each stage has its own prompt, carrying the stage's goal, its issues, the knowledge text and the kernel."""

from __future__ import annotations

import pytest

from kforge.agents.analyzer import Issue
from kforge.agents.stage_writer import StageRequest, StageWriter
from kforge.agents.targets import Target
from kforge.knowledge import STAGES

WRITER = StageWriter(chat=None, target=Target("cuda", "triton"), problem_source="class Model: ...")  # type: ignore[arg-type]


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_has_its_own_goal(stage: str) -> None:
    request = StageRequest(stage, "class ModelNew: pass", 2.0, 4.0, (Issue(stage, "the issue", "the evidence"),),
                           knowledge="- triton-num-warps: a power of two")
    system, user = WRITER.messages(request)
    text = user.parts[0].text
    others = [WRITER.messages(StageRequest(s, "k", None, None, ()))[1].parts[0].text.split("\n\n")[1]
              for s in STAGES if s != stage]
    goal = text.split("\n\n")[1]
    assert goal.startswith("Goal:") and goal not in others
    assert f"({stage})" in text.splitlines()[0]
    assert "the issue (evidence: the evidence)" in text and "triton-num-warps" in text
    assert "class ModelNew: pass" in text and "2 ms" in text and "eager 4 ms" in text
    assert "previous attempt" not in text
    assert "ModelNew" in system.parts[0].text


def test_a_retry_carries_the_failed_attempt_and_why() -> None:
    request = StageRequest("fusion", "current", 1.0, None, (), previous_source="failed one",
                           feedback="num_warps=3 at line 9 is not a power of two")
    text = WRITER.messages(request)[1].parts[0].text
    assert "## Your previous attempt at this stage" in text and "failed one" in text
    assert "num_warps=3 at line 9" in text
