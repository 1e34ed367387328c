"""Retrying transient failures with exponential backoff, honouring a server's Retry-After.

The SDKs' own retry loops are turned off (`max_retries=0`): their backoff constants cannot be configured,
and they do not retry a stream that drops after the reply has begun. One loop here covers every provider.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kforge.llm.errors import LLMError, RateLimited

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry. Delays double from `initial_delay_s` up to `max_delay_s`."""

    retries: int = 4
    initial_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0  # a longer Retry-After fails at once instead of stalling the run

    def delay_s(self, retry: int, error: LLMError) -> float:
        """Seconds to wait before retry number `retry` (0 for the first)."""
        if error.retry_after_s is not None and error.retry_after_s >= 0:
            return error.retry_after_s
        backoff = min(self.initial_delay_s * 2**retry, self.max_delay_s)
        # Up to a quarter less, so clients that failed together do not all come back together.
        return backoff * (1 - 0.25 * random.random())


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call`, retrying the retryable `LLMError`s it raises."""
    for retry in range(policy.retries + 1):
        try:
            return call()
        except LLMError as error:
            if not error.retryable:
                raise
            if retry == policy.retries:
                if retry == 0:
                    raise
                raise type(error)(f"{error} (gave up after {retry} retries)") from error
            if error.retry_after_s is not None and error.retry_after_s > policy.max_retry_after_s:
                raise RateLimited(
                    f"{error} The server asks to wait {error.retry_after_s:.0f} s, longer than the"
                    f" {policy.max_retry_after_s:.0f} s kforge waits; try again later."
                ) from error
            delay = policy.delay_s(retry, error)
            log.warning("%s; retry %d of %d in %.1f s", error, retry + 1, policy.retries, delay)
            sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")
