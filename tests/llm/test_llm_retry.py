"""The retry loop on its own, with a recording sleep instead of waiting."""

import pytest

from kforge.llm import AuthenticationFailed, LLMError, RateLimited, RetryPolicy, ServerError
from kforge.llm.retry import call_with_retries


class Flaky:
    """Fails with the given errors in turn, then answers."""

    def __init__(self, *errors: LLMError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_backoff_doubles_up_to_the_cap_with_jitter_below() -> None:
    policy = RetryPolicy(retries=5, initial_delay_s=1.0, max_delay_s=4.0)
    sleeps: list[float] = []
    flaky = Flaky(*[ServerError("boom")] * 5)
    assert call_with_retries(flaky, policy, sleep=sleeps.append) == "ok"
    assert flaky.calls == 6
    for slept, nominal in zip(sleeps, [1.0, 2.0, 4.0, 4.0, 4.0], strict=True):
        assert 0.75 * nominal <= slept <= nominal


def test_retry_after_is_honoured_exactly() -> None:
    sleeps: list[float] = []
    call_with_retries(Flaky(RateLimited("slow down", retry_after_s=7.5)), RetryPolicy(), sleep=sleeps.append)
    assert sleeps == [7.5]


def test_errors_that_are_not_transient_are_not_retried() -> None:
    flaky = Flaky(AuthenticationFailed("bad key"))
    with pytest.raises(AuthenticationFailed):
        call_with_retries(flaky, RetryPolicy(), sleep=lambda _: None)
    assert flaky.calls == 1


def test_giving_up_says_how_often_it_tried() -> None:
    with pytest.raises(ServerError, match=r"boom \(gave up after 2 retries\)"):
        call_with_retries(Flaky(*[ServerError("boom")] * 3), RetryPolicy(retries=2), sleep=lambda _: None)


def test_no_retries_raises_the_error_as_it_is() -> None:
    with pytest.raises(ServerError, match=r"^boom$"):
        call_with_retries(Flaky(ServerError("boom")), RetryPolicy(retries=0), sleep=lambda _: None)


def test_a_retry_after_beyond_the_limit_fails_at_once() -> None:
    sleeps: list[float] = []
    with pytest.raises(RateLimited, match="asks to wait 600 s, longer than the 120 s"):
        call_with_retries(Flaky(RateLimited("quota", retry_after_s=600)), RetryPolicy(), sleep=sleeps.append)
    assert sleeps == []


def test_llm_errors_are_single_lines() -> None:
    assert str(LLMError("line one\n  line two")) == "line one line two"
