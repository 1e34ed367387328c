"""The one interface every chat model offers, and the part of it all providers share."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kforge.llm.messages import Completion, DeltaCallback, Message, Usage
from kforge.llm.prices import PriceTable
from kforge.llm.retry import RetryPolicy, call_with_retries


@dataclass(frozen=True)
class ModelSpec:
    """Which model on which server. `base_url` is None for the provider's own service."""

    provider: str
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


class ChatModel(Protocol):
    """Messages in, text and usage out."""

    @property
    def spec(self) -> ModelSpec: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> Completion:
        """Ask for the next assistant turn.

        `temperature` None leaves the server's default (some reasoning models accept no other). With
        `on_delta` the reply is streamed and each piece of text is passed to it as it arrives.
        """
        ...


@dataclass(frozen=True)
class Reply:
    """One provider's answer before kforge adds timing and cost."""

    text: str
    usage: Usage | None
    model: str
    stop_reason: str | None


class ProviderChatModel(ABC):
    """A `ChatModel` over one provider's SDK: retries, latency and cost here, the wire format in `_send`."""

    def __init__(self, spec: ModelSpec, *, retry: RetryPolicy, prices: PriceTable) -> None:
        self._spec = spec
        self.retry = retry
        self.prices = prices

    @property
    def spec(self) -> ModelSpec:
        return self._spec

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> Completion:
        if not messages:
            raise ValueError("a chat call needs at least one message")
        started = time.monotonic()
        reply = call_with_retries(
            lambda: self._send(messages, max_tokens=max_tokens, temperature=temperature, on_delta=on_delta),
            self.retry,
        )
        return Completion(
            text=reply.text,
            usage=reply.usage,
            model=reply.model,
            latency_s=time.monotonic() - started,
            cost_usd=self.prices.cost_usd(self.spec.provider, (self.spec.model, reply.model), reply.usage),
            stop_reason=reply.stop_reason,
        )

    @abstractmethod
    def _send(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None,
        on_delta: DeltaCallback | None,
    ) -> Reply:
        """One request to the server; raises `LLMError` (retryable or not) on failure."""
