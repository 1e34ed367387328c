"""The generation agent: writes a complete solution file, refines it from feedback, applies recommendations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kforge.agents.replies import ReplyError, extract_solution
from kforge.agents.targets import Target
from kforge.agents.templates import render
from kforge.llm.base import ChatModel
from kforge.llm.messages import Completion, DeltaCallback, Message

Phase = Literal["generate", "repair", "optimize"]


@dataclass(frozen=True)
class GenerationRequest:
    """One thing to ask the generation agent for."""

    phase: Phase
    previous_source: str | None = None
    feedback: str | None = None
    recommendation: str | None = None
    best_runtime_ms: float | None = None
    eager_ms: float | None = None


@dataclass(frozen=True)
class Proposal:
    """The agent's answer: a solution, or why the reply could not be used."""

    source: str | None
    problem: str | None
    completion: Completion


class GenerationAgent:
    """Writes solutions for the KForge loop: a `kforge.proposer.Proposer` of a `GenerationRequest` -> a `Proposal`
    (with `on_delta`, the reply streams as it comes)."""

    def __init__(self, chat: ChatModel, target: Target, problem_source: str, reference_solution: str | None = None,
                 max_tokens: int = 8192, temperature: float | None = None) -> None:
        self.chat = chat
        self.target = target
        self.problem_source = problem_source
        self.reference_solution = reference_solution
        self.max_tokens = max_tokens
        self.temperature = temperature

    def messages(self, request: GenerationRequest) -> list[Message]:
        example_problem, example_solution = self.target.example()
        common = {"language": self.target.language, "language_name": self.target.language_name,
                  "platform_name": self.target.platform_name}
        user = render("generator", **common, phase=request.phase, example_problem=example_problem.strip(),
                      example_solution=example_solution.strip(), problem_source=self.problem_source.strip(),
                      reference_solution=(self.reference_solution or "").strip(),
                      previous_source=(request.previous_source or "").strip(), feedback=request.feedback or "",
                      recommendation=request.recommendation or "", best_runtime_ms=request.best_runtime_ms,
                      eager_ms=request.eager_ms)
        return [Message.system(render("generator_system", **common)), Message.user(user)]

    def propose(self, request: GenerationRequest, on_delta: DeltaCallback | None = None) -> Proposal:
        completion = self.chat.complete(self.messages(request), max_tokens=self.max_tokens,
                                        temperature=self.temperature, on_delta=on_delta)
        return proposal_from(completion)


def proposal_from(completion: Completion) -> Proposal:
    """The solution in a reply, or why there is none (saying so when the reply hit the token limit)."""
    try:
        return Proposal(extract_solution(completion.text), None, completion)
    except ReplyError as problem:
        cut = " (the reply hit the token limit)" if completion.stop_reason in ("length", "max_tokens") else ""
        return Proposal(None, f"{problem}{cut}", completion)
