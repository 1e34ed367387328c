"""What the knowledge base gives the staged pipeline: text for each stage's prompt, and checks before hardware.

The pipeline sees two functions, so tests and other sources of knowledge can stand in for the real base.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kforge.knowledge import DeviceLimits, Retrieval, Violation, load_knowledge, problem_features

Checker = Callable[[str], Sequence[Violation]]
Retriever = Callable[[str], Retrieval]


@dataclass(frozen=True)
class KnowledgeAccess:
    retrieve: Retriever  # stage -> the knowledge text for its prompt
    check: Checker  # candidate source -> the constraints it breaks

    @classmethod
    def load(cls, platform: str, language: str, device_name: str | None, problem_source: str,
             token_budget: int) -> KnowledgeAccess:
        """The knowledge base of a target, retrieving for the problem's features and checking the device's limits."""
        base = load_knowledge(platform, language)
        features = problem_features(problem_source)
        limits = DeviceLimits.defaults(platform, device_name)
        return cls(retrieve=lambda stage: base.retrieve(stage, features, token_budget=token_budget),
                   check=lambda source: base.check(source, limits))
