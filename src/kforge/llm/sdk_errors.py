"""Turning the SDKs' exceptions into kforge's `LLMError` family, with one readable line each.

Both official SDKs raise the same shapes (`APIStatusError` with the HTTP response, `APIConnectionError`,
`APITimeoutError`), but while a stream is read they can also let the HTTP library's own network errors
escape, and a reply that is not JSON surfaces as `json.JSONDecodeError`; all of these are caught here.
"""

from __future__ import annotations

import email.utils
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from kforge.llm.errors import (
    AuthenticationFailed,
    BadRequest,
    LLMError,
    LLMTimeout,
    MalformedResponse,
    RateLimited,
    ServerError,
    ServerUnreachable,
    UnknownModel,
)

_DETAIL_CHARS = 300


@dataclass(frozen=True)
class SdkExceptions:
    """The exception classes of one SDK."""

    status: type[Exception]
    connection: type[Exception]
    timeout: type[Exception]
    base: type[Exception]  # what the SDK raises for an error event inside a stream


@dataclass(frozen=True)
class CallContext:
    """What an error message needs to say where and what: never the key itself, only what to scrub."""

    model: str  # "provider:model"
    url: str
    key_env: str
    timeout_s: float
    secret: str | None = None

    @property
    def where(self) -> str:
        return f"{self.model} at {self.url}"


def truncated_stream(ctx: CallContext) -> ServerUnreachable:
    """For a stream whose body ended cleanly without the reply's end: a proxy or server cut it short."""
    return ServerUnreachable(f"{ctx.where}: the stream ended before the reply was complete")


def malformed(ctx: CallContext, what: str) -> MalformedResponse:
    return MalformedResponse(f"{ctx.where}: malformed reply, {what}")


_T = TypeVar("_T")


def translating(call: Callable[[], _T], sdk: SdkExceptions, ctx: CallContext) -> _T:
    """`call()`, with whatever SDK exception it raises turned into its `LLMError` (others pass through)."""
    try:
        return call()
    except LLMError:
        raise
    except Exception as err:
        error = translate(err, sdk, ctx)
        if error is None:
            raise
        raise error from err


def translate(err: BaseException, sdk: SdkExceptions, ctx: CallContext) -> LLMError | None:
    """The `LLMError` for an exception raised by an SDK call, or None if it is not one we know (a bug)."""
    error = _translate(err, sdk, ctx)
    if error is not None and ctx.secret and ctx.secret in str(error):
        # A server may echo the key it refused; it must not reach logs or the screen.
        error = type(error)(str(error).replace(ctx.secret, "***"), retry_after_s=error.retry_after_s)
    return error


def _translate(err: BaseException, sdk: SdkExceptions, ctx: CallContext) -> LLMError | None:
    where = ctx.where
    if isinstance(err, sdk.status):
        return _from_status(err, ctx)
    if isinstance(err, (sdk.timeout, *_http_timeouts())):
        return LLMTimeout(
            f"{where}: no answer for {ctx.timeout_s:g} s; raise the timeout (KFORGE_TIMEOUT_S) if the model is slow"
        )
    if isinstance(err, (sdk.connection, *_http_errors())):
        cause = err.__cause__ or err
        if isinstance(cause, _http_connect_errors()):
            return ServerUnreachable(
                f"{where}: cannot connect ({cause}); check that the server is running and the base URL is right"
            )
        return ServerUnreachable(f"{where}: the connection dropped ({type(cause).__name__}: {cause})")
    if isinstance(err, sdk.base):
        detail = _detail(getattr(err, "body", None)) or str(err)
        return ServerError(f"{where}: the server reported an error mid-reply: {_clip(detail)}")
    if isinstance(err, json.JSONDecodeError):
        return MalformedResponse(f"{where}: the reply is not valid JSON ({err}); is the base URL an API endpoint?")
    return None


def _from_status(err: BaseException, ctx: CallContext) -> LLMError:
    status = int(getattr(err, "status_code", 0))
    detail = _clip(_detail(getattr(err, "body", None)) or str(err))
    where = ctx.where
    said = f"(HTTP {status}: {detail})"
    if status < 400:  # an error event inside a stream that had begun with 200 (Anthropic's "overloaded")
        return ServerError(f"{where}: the server reported an error mid-reply: {detail}")
    if status in (401, 403):
        return AuthenticationFailed(f"{where}: the server refused the API key {said}; check {ctx.key_env}")
    if status == 404:
        return UnknownModel(f"{where}: no such model or endpoint {said}; check the model name and base URL")
    if status == 429:
        return RateLimited(f"{where}: rate limited {said}", retry_after_s=_retry_after_s(err))
    if status >= 500:
        return ServerError(f"{where}: server error {said}", retry_after_s=_retry_after_s(err))
    if status in (408, 409):  # request timeout, lock conflict: transient per the providers' docs
        return ServerError(f"{where}: transient failure {said}", retry_after_s=_retry_after_s(err))
    return BadRequest(f"{where}: request rejected {said}")


def _detail(body: object) -> str | None:
    """The server's own message out of an error body (OpenAI and Anthropic nest it differently)."""
    if isinstance(body, Mapping):
        if "error" in body:
            return _detail(body["error"])
        if isinstance(body.get("message"), str):
            return body["message"]
        return json.dumps(body)
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


def _clip(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "..."


def _retry_after_s(err: BaseException) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date), if the server sent one."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) * scale, 0.0)
        except ValueError:
            pass
    date = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(date) if date else None
    return max(email.utils.mktime_tz(parsed) - time.time(), 0.0) if parsed else None


def _http_errors() -> tuple[type[BaseException], ...]:
    # The SDKs are built on httpx (older releases) or httpx2; look only at the ones already imported.
    return tuple(m.RequestError for m in _http_modules())


def _http_connect_errors() -> tuple[type[BaseException], ...]:
    return tuple(m.ConnectError for m in _http_modules())


def _http_timeouts() -> tuple[type[BaseException], ...]:
    return tuple(m.TimeoutException for m in _http_modules())


def _http_modules() -> list[ModuleType]:
    return [sys.modules[name] for name in ("httpx2", "httpx") if name in sys.modules]


def public_url(url: str) -> str:
    """The URL without user:password or query, fit for messages and the cache key."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
