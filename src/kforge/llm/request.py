"""A request as data: what the store records and what identifies identical requests for the cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kforge.llm.base import ModelSpec
from kforge.llm.messages import ImagePart, Message

# Bump when the description below changes shape, so old cache entries stop matching instead of misleading.
_FORMAT = 1


def describe_request(
    spec: ModelSpec, messages: Sequence[Message], *, max_tokens: int, temperature: float | None
) -> dict[str, Any]:
    """Model, server, messages and parameters as JSON-ready data. Images appear as their SHA-256 and size
    (the PNGs themselves belong in the profiles table); headers and keys never appear."""
    return {
        "format": _FORMAT,
        "model": str(spec),
        "base_url": spec.base_url,
        "messages": [_describe(m) for m in messages],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }


def request_hash(request: Mapping[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _describe(message: Message) -> dict[str, Any]:
    if isinstance(message.content, str):
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ImagePart):
            digest = hashlib.sha256(part.data).hexdigest()
            parts.append({"type": "image", "media_type": part.media_type, "sha256": digest, "bytes": len(part.data)})
        else:
            parts.append({"type": "text", "text": part.text})
    return {"role": message.role, "content": parts}
