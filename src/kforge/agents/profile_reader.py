"""What the analyst (KForge loop) and the analyzer (staged pipeline) share: an agent that reads a kernel with
its profile, for one target, and may show the model the profile's chart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kforge.agents.targets import Target
from kforge.agents.templates import render
from kforge.llm.base import ChatModel
from kforge.llm.messages import Completion, Message


@dataclass(frozen=True)
class ProfileView:
    """The profile as an agent sees it: a text table, and a chart for models that read images."""

    text: str
    png: bytes | None = None


class ProfileReader:
    """Prompts `<template>_system` and `<template>` with the problem, the profile's text and, for models that
    read images (`send_images`), its chart."""

    template: ClassVar[str]
    default_max_tokens: ClassVar[int] = 1024

    def __init__(self, chat: ChatModel, target: Target, problem_source: str, send_images: bool = False,
                 max_tokens: int | None = None, temperature: float | None = None) -> None:
        self.chat = chat
        self.target = target
        self.problem_source = problem_source
        self.send_images = send_images
        self.max_tokens = max_tokens or self.default_max_tokens
        self.temperature = temperature

    def prompt(self, profile: ProfileView, **values: Any) -> list[Message]:
        chart = profile.png if self.send_images and profile.png else None
        user = render(self.template, problem_source=self.problem_source.strip(), profile_text=profile.text.strip(),
                      has_chart=chart is not None, **values)
        system = render(f"{self.template}_system", language_name=self.target.language_name,
                        platform_name=self.target.platform_name)
        return [Message.system(system), Message.user(user, *([chart] if chart else []))]

    def ask(self, messages: list[Message]) -> Completion:
        return self.chat.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature)
