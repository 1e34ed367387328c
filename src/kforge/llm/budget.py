"""Limits on what a run may spend on LLM calls, checked before every call that would reach the network."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kforge.llm.errors import LLMError
from kforge.llm.messages import Completion

log = logging.getLogger(__name__)


class BudgetExceeded(LLMError):
    """A limit is reached; `limit` names it (max_calls, max_tokens, max_usd or max_wall_s)."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


@dataclass(frozen=True)
class Spend:
    """What has been used so far. A resumed run starts from what the store says it already spent."""

    calls: int = 0
    tokens: int = 0
    usd: float = 0.0


class Budget:
    """Call, token, dollar and wall-clock limits; None means no limit. Safe to share between threads."""

    def __init__(
        self,
        *,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_usd: float | None = None,
        max_wall_s: float | None = None,
        spent: Spend | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self.max_wall_s = max_wall_s
        self._spent = spent or Spend()
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        self._warned_unpriced = False

    @property
    def spent(self) -> Spend:
        return self._spent

    @property
    def elapsed_s(self) -> float:
        return self._clock() - self._started

    def check(self) -> None:
        """Raise `BudgetExceeded` if any limit is already reached, so the next call is not made."""
        spent = self._spent
        if self.max_calls is not None and spent.calls >= self.max_calls:
            raise BudgetExceeded(
                f"LLM budget reached: {spent.calls} calls made, max_calls is {self.max_calls}",
                limit="max_calls",
            )
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"LLM budget reached: {spent.tokens} tokens used, max_tokens is {self.max_tokens}",
                limit="max_tokens",
            )
        if self.max_usd is not None and spent.usd >= self.max_usd:
            raise BudgetExceeded(
                f"LLM budget reached: ${spent.usd:.4f} spent, max_usd is ${self.max_usd:.4f}", limit="max_usd"
            )
        if self.max_wall_s is not None and self.elapsed_s >= self.max_wall_s:
            raise BudgetExceeded(
                f"time budget reached: {self.elapsed_s:.0f} s elapsed, max_wall_s is {self.max_wall_s:g}",
                limit="max_wall_s",
            )

    def charge(self, completion: Completion) -> None:
        """Count a call that reached the network."""
        if completion.cost_usd is None and self.max_usd is not None and not self._warned_unpriced:
            self._warned_unpriced = True
            log.warning(
                "max_usd is set but %s has no price (or reported no usage): its dollars are not counted;"
                " add it to prices.toml",
                completion.model,
            )
        tokens = completion.usage.total_tokens if completion.usage else 0
        with self._lock:
            self._spent = Spend(
                calls=self._spent.calls + 1,
                tokens=self._spent.tokens + tokens,
                usd=self._spent.usd + (completion.cost_usd or 0.0),
            )
