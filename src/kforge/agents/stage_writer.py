"""The stage writer (staged pipeline): rewrites a correct kernel for one stage, with that stage's prompt.

Each stage has its own template, `prompts/stage_<name>.j2`, extending `stage_base.j2`: the stage's goal,
the analyzer's issues for it, what the knowledge base says for it, the current kernel, and on a retry the
failed attempt with the reason it failed. Replies are read like the generation agent's.
"""

from __future__ import annotations

from dataclasses import dataclass

from kforge.agents.analyzer import Issue
from kforge.agents.generator import Proposal, proposal_from
from kforge.agents.targets import Target
from kforge.agents.templates import render
from kforge.knowledge.stages import STAGE_TITLES
from kforge.llm.base import ChatModel
from kforge.llm.messages import DeltaCallback, Message


@dataclass(frozen=True)
class StageRequest:
    stage: str
    kernel_source: str
    runtime_ms: float | None
    eager_ms: float | None
    issues: tuple[Issue, ...]
    knowledge: str = ""  # names what the token budget left out on its last line
    previous_source: str | None = None  # the failed attempt, on a retry
    feedback: str | None = None


class StageWriter:
    """Rewrites a kernel for one stage: a `kforge.proposer.Proposer` of a `StageRequest` -> a `Proposal`."""

    def __init__(self, chat: ChatModel, target: Target, problem_source: str, max_tokens: int = 8192,
                 temperature: float | None = None) -> None:
        self.chat = chat
        self.target = target
        self.problem_source = problem_source
        self.max_tokens = max_tokens
        self.temperature = temperature

    def messages(self, request: StageRequest) -> list[Message]:
        common = {"language": self.target.language, "language_name": self.target.language_name,
                  "platform_name": self.target.platform_name}
        user = render(f"stage_{request.stage}", **common, stage=request.stage,
                      stage_title=STAGE_TITLES[request.stage], problem_source=self.problem_source.strip(),
                      kernel_source=request.kernel_source.strip(), runtime_ms=request.runtime_ms,
                      eager_ms=request.eager_ms, issues=request.issues, knowledge=request.knowledge.strip(),
                      previous_source=(request.previous_source or "").strip(), feedback=request.feedback or "")
        return [Message.system(render("generator_system", **common)), Message.user(user)]

    def propose(self, request: StageRequest, on_delta: DeltaCallback | None = None) -> Proposal:
        completion = self.chat.complete(self.messages(request), max_tokens=self.max_tokens,
                                        temperature=self.temperature, on_delta=on_delta)
        return proposal_from(completion)
