"""What goes into a chat model and what comes out, independent of any provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]

DeltaCallback = Callable[[str], None]
"""Called with each piece of text as it streams in. After a retried failure the text starts over."""


class TextPart(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """A PNG image, sent to models that accept images (a roofline chart, a profile plot)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["image"] = "image"
    data: bytes
    media_type: Literal["image/png"] = "image/png"


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | tuple[Part, ...]

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str, *images: bytes) -> Message:
        """A user turn; PNG images, if any, follow the text."""
        if not images:
            return cls(role="user", content=text)
        return cls(role="user", content=(TextPart(text=text), *(ImagePart(data=png) for png in images)))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls(role="assistant", content=text)

    @property
    def parts(self) -> tuple[TextPart | ImagePart, ...]:
        return (TextPart(text=self.content),) if isinstance(self.content, str) else self.content

    @property
    def text(self) -> str:
        """The text parts joined, images left out."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Completion(BaseModel):
    """A model's answer. `usage` is None when the server did not report it (then `cost_usd` is None too)."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: Usage | None
    model: str = Field(description="the model as the server named it")
    latency_s: float = Field(description="seconds the caller waited, retries included")
    cost_usd: float | None = Field(default=None, description="None when the model has no price")
    cached: bool = False
    stop_reason: str | None = Field(default=None, description="as the provider says it: stop, length, end_turn...")


def wire_message(message: Message, wire_part: Callable[[TextPart | ImagePart], dict[str, Any]]) -> dict[str, Any]:
    """A message as both Chat Completions and Messages take it: plain text, or a list of parts that `wire_part`
    spells in the provider's own format."""
    if isinstance(message.content, str):
        return {"role": message.role, "content": message.content}
    return {"role": message.role, "content": [wire_part(part) for part in message.content]}
