"""`openai:MODEL`: any server speaking OpenAI's Chat Completions API, through the official SDK."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai

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

KEY_ENV = "OPENAI_API_KEY"
_SDK = SdkExceptions(
    status=openai.APIStatusError,
    connection=openai.APIConnectionError,
    timeout=openai.APITimeoutError,
    base=openai.APIError,
)


class OpenAIChatModel(ProviderChatModel):
    """Reads OPENAI_API_KEY and OPENAI_BASE_URL as the SDK does, unless given explicitly."""

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
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            raise MissingAPIKey(
                f"openai:{model}: no API key; set {KEY_ENV} (any value will do for a local server that checks none)"
            )
        # max_retries=0: retries are kforge's (see retry.py), so each is logged and its backoff configurable.
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)
        url = public_url(str(self._client.base_url))
        super().__init__(ModelSpec("openai", model, url), retry=retry or RetryPolicy(), prices=prices or load_prices())
        self._context = CallContext(model=str(self.spec), url=url, key_env=KEY_ENV, timeout_s=timeout_s, secret=key)
        # OpenAI's own service wants max_completion_tokens (its reasoning models refuse max_tokens), while
        # compatible servers (vLLM, llama.cpp, Ollama...) all understand max_tokens.
        official = urlsplit(url).hostname == "api.openai.com"
        self._max_tokens_field = "max_completion_tokens" if official else "max_tokens"

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
            "messages": [wire_message(m, _wire_part) for m in messages],
            self._max_tokens_field: max_tokens,
        }
        if temperature is not None:
            params["temperature"] = temperature
        create = self._client.chat.completions.create
        if on_delta is None:
            return self._reply(translating(lambda: create(**params), _SDK, self._context))
        stream = translating(lambda: create(**params, stream=True, stream_options={"include_usage": True}),
                             _SDK, self._context)
        return translating(lambda: self._read_stream(stream, on_delta), _SDK, self._context)

    def _reply(self, response: Any) -> Reply:
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise malformed(self._context, f"no choices in the reply: {str(response)[:200]!r}")
        choice = choices[0]
        return Reply(
            text=choice.message.content or "",
            usage=_usage(getattr(response, "usage", None)),
            model=getattr(response, "model", None) or self.spec.model,
            stop_reason=getattr(choice, "finish_reason", None),
        )

    def _read_stream(self, chunks: Iterable[Any], on_delta: DeltaCallback) -> Reply:
        text: list[str] = []
        usage: Usage | None = None
        model = self.spec.model
        stop_reason: str | None = None
        for chunk in chunks:
            model = getattr(chunk, "model", None) or model
            usage = _usage(getattr(chunk, "usage", None)) or usage
            for choice in getattr(chunk, "choices", None) or ():
                piece = getattr(getattr(choice, "delta", None), "content", None)
                if piece:
                    text.append(piece)
                    on_delta(piece)
                stop_reason = getattr(choice, "finish_reason", None) or stop_reason
        if stop_reason is None:
            raise truncated_stream(self._context)
        return Reply(text="".join(text), usage=usage, model=model, stop_reason=stop_reason)


def _wire_part(part: Any) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        data = base64.b64encode(part.data).decode()
        return {"type": "image_url", "image_url": {"url": f"data:{part.media_type};base64,{data}"}}
    return {"type": "text", "text": part.text}


def _usage(usage: Any) -> Usage | None:
    if usage is None or getattr(usage, "prompt_tokens", None) is None:
        return None
    return Usage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens or 0)
