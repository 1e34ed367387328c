"""`anthropic:MODEL`: Anthropic's Messages API (or a compatible server), through the official SDK."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

import anthropic

from kforge.llm.base import ModelSpec, ProviderChatModel, Reply
from kforge.llm.errors import MissingAPIKey
from kforge.llm.messages import DeltaCallback, ImagePart, Message, Usage, wire_message
from kforge.llm.prices import PriceTable, load_prices
from kforge.llm.retry import RetryPolicy
from kforge.llm.sdk_errors import (
    CallContext,
    SdkExceptions,
    malformed,
    public_url,
    translating,
    truncated_stream,
)

KEY_ENV = "ANTHROPIC_API_KEY"
_SDK = SdkExceptions(
    status=anthropic.APIStatusError,
    connection=anthropic.APIConnectionError,
    timeout=anthropic.APITimeoutError,
    base=anthropic.APIError,
)


class AnthropicChatModel(ProviderChatModel):
    """Reads ANTHROPIC_API_KEY (or the SDK's other credentials) and ANTHROPIC_BASE_URL, unless given."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        # max_retries=0: retries are kforge's (see retry.py), so each is logged and its backoff configurable.
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)
        secret = self._client.api_key or getattr(self._client, "auth_token", None)
        if not secret and getattr(self._client, "credentials", None) is None:
            raise MissingAPIKey(f"anthropic:{model}: no API key; set {KEY_ENV}")
        url = public_url(str(self._client.base_url))
        super().__init__(
            ModelSpec("anthropic", model, url), retry=retry or RetryPolicy(), prices=prices or load_prices()
        )
        self._context = CallContext(model=str(self.spec), url=url, key_env=KEY_ENV, timeout_s=timeout_s, secret=secret)

    def _send(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None,
        on_delta: DeltaCallback | None,
    ) -> Reply:
        params: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": max_tokens,
            "messages": [wire_message(m, _wire_part) for m in messages if m.role != "system"],
        }
        # The Messages API takes the system prompt beside the turns, not as one of them.
        system = "\n\n".join(_system_text(m) for m in messages if m.role == "system")
        if system:
            params["system"] = system
        if temperature is not None:
            # Through extra_body: recent SDK releases dropped the `temperature` argument, yet the API and
            # compatible servers still take the field.
            params["extra_body"] = {"temperature": temperature}
        create = self._client.messages.create
        if on_delta is None:
            return self._reply(translating(lambda: create(**params), _SDK, self._context))
        stream = translating(lambda: create(**params, stream=True), _SDK, self._context)
        return translating(lambda: self._read_stream(stream, on_delta), _SDK, self._context)

    def _reply(self, message: Any) -> Reply:
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise malformed(self._context, f"no content in the reply: {str(message)[:200]!r}")
        return Reply(
            text="".join(block.text for block in content if getattr(block, "type", None) == "text"),
            usage=_usage(getattr(message, "usage", None)),
            model=getattr(message, "model", None) or self.spec.model,
            stop_reason=getattr(message, "stop_reason", None),
        )

    def _read_stream(self, events: Iterable[Any], on_delta: DeltaCallback) -> Reply:
        text: list[str] = []
        prompt_tokens: int | None = None
        completion_tokens = 0
        model = self.spec.model
        stop_reason: str | None = None
        complete = False
        for event in events:
            kind = getattr(event, "type", None)
            if kind == "message_start":
                model = getattr(event.message, "model", None) or model
                usage = _usage(getattr(event.message, "usage", None))
                if usage is not None:
                    prompt_tokens, completion_tokens = usage.prompt_tokens, usage.completion_tokens
            elif kind == "content_block_delta" and getattr(event.delta, "type", None) == "text_delta":
                text.append(event.delta.text)
                on_delta(event.delta.text)
            elif kind == "message_delta":
                stop_reason = getattr(event.delta, "stop_reason", None) or stop_reason
                # The counts in message_delta are running totals, not increments.
                totals = getattr(event, "usage", None)
                completion_tokens = getattr(totals, "output_tokens", None) or completion_tokens
                if (input_totals := _usage(totals)) is not None:
                    prompt_tokens = input_totals.prompt_tokens
            elif kind == "message_stop":
                complete = True
        if not complete:
            raise truncated_stream(self._context)
        usage = (
            None if prompt_tokens is None else Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        )
        return Reply(text="".join(text), usage=usage, model=model, stop_reason=stop_reason)


def _system_text(message: Message) -> str:
    if any(isinstance(p, ImagePart) for p in message.parts):
        raise ValueError("the Messages API takes no images in the system prompt; put them in a user turn")
    return message.text


def _wire_part(part: Any) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        data = base64.b64encode(part.data).decode()
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": data}}
    return {"type": "text", "text": part.text}


def _usage(usage: Any) -> Usage | None:
    if usage is None or getattr(usage, "input_tokens", None) is None:
        return None
    # Prompt-cache reads and writes are input too; they are billed at other rates, but counting them keeps
    # token budgets honest.
    prompt = usage.input_tokens + (getattr(usage, "cache_read_input_tokens", None) or 0)
    prompt += getattr(usage, "cache_creation_input_tokens", None) or 0
    return Usage(prompt_tokens=prompt, completion_tokens=getattr(usage, "output_tokens", None) or 0)
