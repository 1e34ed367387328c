"""The errors a chat model raises: one line for the user saying what is wrong and what to do.

`retryable` marks the transient ones (rate limits, server errors, dropped connections, timeouts) that
`retry.call_with_retries` tries again; the rest fail at once.
"""

from __future__ import annotations


class LLMError(Exception):
    """A chat model call failed. `str(error)` is a single line fit to show a user."""

    retryable = False

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.retry_after_s = retry_after_s  # what the server asked us to wait, when it said


class MissingAPIKey(LLMError):
    """No key in the environment or the settings; nothing was sent."""


class AuthenticationFailed(LLMError):
    """The server refused the key (HTTP 401 or 403)."""


class UnknownModel(LLMError):
    """The server does not serve this model (HTTP 404)."""


class BadRequest(LLMError):
    """The server rejected the request as malformed or too large (other HTTP 4xx)."""


class MalformedResponse(LLMError):
    """The server answered, but not in the shape the API promises (bad JSON, missing fields, no text)."""


class RateLimited(LLMError):
    retryable = True


class ServerError(LLMError):
    """HTTP 5xx, including overloaded."""

    retryable = True


class ServerUnreachable(LLMError):
    """The connection could not be made, or it dropped before the reply was complete."""

    retryable = True


class LLMTimeout(LLMError):
    """The server sent nothing for longer than the timeout."""

    retryable = True
