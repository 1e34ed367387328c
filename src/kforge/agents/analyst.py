"""The performance-analysis agent: reads a correct kernel and its profile, recommends one change."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kforge.agents.profile_reader import ProfileReader, ProfileView
from kforge.llm.messages import Completion, Message

__all__ = ["AnalystAgent", "ProfileView", "Recommendation"]

_RECOMMENDATION = re.compile(r"Recommendation:\s*(.+?)(?:\n\s*Reason:|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Recommendation:
    text: str
    completion: Completion


class AnalystAgent(ProfileReader):
    template = "analyst"
    default_max_tokens = 1024

    def messages(self, candidate_source: str, runtime_ms: float, eager_ms: float | None, profile: ProfileView,
                 history: list[str]) -> list[Message]:
        return self.prompt(profile, candidate_source=candidate_source.strip(), runtime_ms=runtime_ms,
                           eager_ms=eager_ms, history=history)

    def recommend(self, candidate_source: str, runtime_ms: float, eager_ms: float | None, profile: ProfileView,
                  history: list[str]) -> Recommendation:
        completion = self.ask(self.messages(candidate_source, runtime_ms, eager_ms, profile, history))
        match = _RECOMMENDATION.search(completion.text)
        text = (match.group(1) if match else completion.text).strip()
        return Recommendation(" ".join(text.split()), completion)
