"""The agents' prompts: built from template files, carrying what the model needs and nothing missing."""

from __future__ import annotations

import jinja2
import pytest

from kforge.agents.analyst import AnalystAgent, ProfileView
from kforge.agents.feedback import AttemptOutcome, verdict_feedback
from kforge.agents.generator import GenerationAgent, GenerationRequest
from kforge.agents.targets import MissingExample, Target
from kforge.agents.templates import render
from kforge.verify.verdict import Outcome, Verdict

PROBLEM = "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n"
CPU = Target("cpu", "cpp")


def text_of(message) -> str:
    return "\n".join(part.text for part in message.parts if hasattr(part, "text"))


def test_generation_prompt_carries_problem_example_and_rules() -> None:
    agent = GenerationAgent(chat=None, target=CPU, problem_source=PROBLEM)  # type: ignore[arg-type]
    system, user = agent.messages(GenerationRequest(phase="generate"))
    assert "C++ (OpenMP)" in text_of(system) and "try/except" in text_of(system)
    assert PROBLEM.strip() in text_of(user)
    assert "kforge_example_bias_clamp" in text_of(user)  # the single-shot example's solution
    assert "translate" not in text_of(user)


def test_repair_prompt_carries_previous_candidate_and_feedback() -> None:
    agent = GenerationAgent(chat=None, target=CPU, problem_source=PROBLEM,  # type: ignore[arg-type]
                            reference_solution="# a CUDA version")
    _, user = agent.messages(GenerationRequest(phase="repair", previous_source="class ModelNew: ...",
                                               feedback="The code did not compile."))
    text = text_of(user)
    assert "previous failed" in text.replace("Your previous candidate failed", "previous failed")
    assert "class ModelNew: ..." in text and "The code did not compile." in text
    assert "# a CUDA version" in text and "translate" in text


def test_optimize_prompt_carries_the_recommendation() -> None:
    agent = GenerationAgent(chat=None, target=CPU, problem_source=PROBLEM)  # type: ignore[arg-type]
    _, user = agent.messages(GenerationRequest(phase="optimize", previous_source="src", recommendation="tile it",
                                               best_runtime_ms=1.5, eager_ms=3.0))
    assert "tile it" in text_of(user) and "1.5 ms" in text_of(user) and "3 ms" in text_of(user)


def test_analyst_prompt_sends_the_chart_only_to_models_that_see_images() -> None:
    view = ProfileView(text="kernel  100%", png=b"\x89PNG fake")
    blind = AnalystAgent(chat=None, target=CPU, problem_source=PROBLEM)  # type: ignore[arg-type]
    _, user = blind.messages("src", 1.0, 2.0, view, history=["fuse loops"])
    assert len(user.parts) == 1 and "kernel  100%" in text_of(user) and "fuse loops" in text_of(user)
    seeing = AnalystAgent(chat=None, target=CPU, problem_source=PROBLEM, send_images=True)  # type: ignore[arg-type]
    _, user = seeing.messages("src", 1.0, 2.0, view, history=[])
    assert len(user.parts) == 2 and "attached image" in text_of(user)


def test_missing_variables_fail_loudly() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("analyst_system")


def test_targets_without_an_example_say_how_to_add_one() -> None:
    with pytest.raises(MissingExample, match="kforge/data/examples/tpu/xla"):
        Target("tpu", "xla").example()


def test_feedback_for_each_outcome() -> None:
    base = {"platform": "cpu", "language": "cpp"}
    build = Verdict(verdict=Outcome.COMPILE_ERROR, reason="main.cpp:3: error: expected ';'", **base)
    assert "did not compile" in verdict_feedback(build) and "expected ';'" in verdict_feedback(build)
    wrong = Verdict(verdict=Outcome.INCORRECT, reason="output: 3 of 10 elements out of tolerance",
                    max_abs_error=0.5, **base)
    assert "max abs error 0.5" in verdict_feedback(wrong)
    rejected = Verdict(verdict=Outcome.REJECTED, reason="calls torch.matmul", rule="static.framework-compute",
                       **base)
    assert "static.framework-compute" in verdict_feedback(rejected)
    assert "own kernel" in verdict_feedback(rejected)  # the rule's help line
    assert AttemptOutcome.of(build) == AttemptOutcome.BUILD_FAILURE
    assert AttemptOutcome.of(wrong) == AttemptOutcome.MISMATCH
