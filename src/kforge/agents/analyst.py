"""The performance-analysis agent: reads a correct kernel and its profile, recommends one change."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kforge.agents.generator import Chat
from kforge.agents.targets import Target
from kforge.agents.templates import render
from kforge.llm.messages import Completion, Message

_RECOMMENDATION = re.compile(r"Recommendation:\s*(.+?)(?:\n\s*Reason:|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Recommendation:
    text: str
    completion: Completion


@dataclass(frozen=True)
class ProfileView:
    """The profile as the analyst sees it: a text table, and a chart for models that read images."""

    text: str
    png: bytes | None = None


class AnalystAgent:
    def __init__(self, chat: Chat, target: Target, problem_source: str, send_images: bool = False,
                 max_tokens: int = 1024, temperature: float | None = None) -> None:
        self.chat = chat
        self.target = target
        self.problem_source = problem_source
        self.send_images = send_images
        self.max_tokens = max_tokens
        self.temperature = temperature

    def messages(self, candidate_source: str, runtime_ms: float, eager_ms: float | None, profile: ProfileView,
                 history: list[str]) -> list[Message]:
        chart = profile.png if self.send_images and profile.png else None
        user = render("analyst", problem_source=self.problem_source.strip(),
                      candidate_source=candidate_source.strip(), runtime_ms=runtime_ms, eager_ms=eager_ms,
                      profile_text=profile.text.strip(), has_chart=chart is not None, history=history)
        system = render("analyst_system", language_name=self.target.language_name,
                        platform_name=self.target.platform_name)
        return [Message.system(system), Message.user(user, *([chart] if chart else []))]

    def recommend(self, candidate_source: str, runtime_ms: float, eager_ms: float | None, profile: ProfileView,
                  history: list[str]) -> Recommendation:
        completion = self.chat.complete(self.messages(candidate_source, runtime_ms, eager_ms, profile, history),
                                        max_tokens=self.max_tokens, temperature=self.temperature)
        match = _RECOMMENDATION.search(completion.text)
        text = (match.group(1) if match else completion.text).strip()
        return Recommendation(" ".join(text.split()), completion)
