"""A chat model that records every call in the run store, answers repeats from it, and keeps a budget."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

from kforge.llm.base import ChatModel, ModelSpec
from kforge.llm.budget import Budget
from kforge.llm.messages import Completion, DeltaCallback, Message, Usage
from kforge.llm.request import describe_request, request_hash
from kforge.store import LLMCall, Store


class RecordingChatModel:
    """Wraps a `ChatModel` for one run.

    An identical request (same model, server, messages and parameters) is answered from the store's
    earlier calls, from any run, with no network and no spend; the answer is recorded as a cache hit.
    Asking the same thing again within this run gets the next recorded answer, if there is one, and
    otherwise a fresh one: sampling a prompt twice yields two samples, and a resumed run replays its
    answers in the order it first got them. `use_cache=False` always asks the model (and still records).
    """

    def __init__(
        self,
        model: ChatModel,
        store: Store,
        run_id: int,
        *,
        budget: Budget | None = None,
        use_cache: bool = True,
        attempt_id: int | None = None,
    ) -> None:
        self.model = model
        self.store = store
        self.run_id = run_id
        self.budget = budget
        self.use_cache = use_cache
        self.attempt_id = attempt_id
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def spec(self) -> ModelSpec:
        return self.model.spec

    def for_attempt(self, attempt_id: int | None) -> RecordingChatModel:
        """The same recorder, filing its calls under an attempt (say, an analysis of that attempt)."""
        bound = RecordingChatModel(
            self.model,
            self.store,
            self.run_id,
            budget=self.budget,
            use_cache=self.use_cache,
            attempt_id=attempt_id,
        )
        bound._asked, bound._lock = self._asked, self._lock  # one run, one count of repeats
        return bound

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> Completion:
        request = describe_request(self.spec, messages, max_tokens=max_tokens, temperature=temperature)
        key = request_hash(request)
        with self._lock:
            occurrence = self._asked[key]
            self._asked[key] += 1

        if self.use_cache:
            earlier = self.store.find_cached_llm_response(key, occurrence=occurrence)
            if earlier is not None:
                return self._replay(earlier, request, key, on_delta)

        if self.budget is not None:
            self.budget.check()
        completion = self.model.complete(messages, max_tokens=max_tokens, temperature=temperature, on_delta=on_delta)
        if self.budget is not None:
            self.budget.charge(completion)
        self.store.record_llm_call(
            self.run_id,
            attempt_id=self.attempt_id,
            model=completion.model,
            provider=self.spec.provider,
            request=request,
            response_text=completion.text,
            request_hash=key,
            latency_s=completion.latency_s,
            prompt_tokens=completion.usage.prompt_tokens if completion.usage else None,
            completion_tokens=completion.usage.completion_tokens if completion.usage else None,
            cost_usd=completion.cost_usd,
        )
        return completion

    def _replay(
        self, earlier: LLMCall, request: dict[str, object], key: str, on_delta: DeltaCallback | None
    ) -> Completion:
        if on_delta is not None:
            on_delta(earlier.response_text)
        usage = None
        if earlier.prompt_tokens is not None:
            usage = Usage(prompt_tokens=earlier.prompt_tokens, completion_tokens=earlier.completion_tokens or 0)
        self.store.record_llm_call(
            self.run_id,
            attempt_id=self.attempt_id,
            model=earlier.model,
            provider=earlier.provider,
            request=request,
            response_text=earlier.response_text,
            request_hash=key,
            latency_s=0.0,
            prompt_tokens=earlier.prompt_tokens,
            completion_tokens=earlier.completion_tokens,
            cost_usd=0.0,
            cache_hit=True,
        )
        return Completion(
            text=earlier.response_text,
            usage=usage,
            model=earlier.model,
            latency_s=0.0,
            cost_usd=0.0,
            cached=True,
        )
