"""Budgets are checked before a call and say which limit stopped the run."""

import pytest

from kforge.llm import Budget, BudgetExceeded, Completion, Spend, Usage


def completion(prompt: int, output: int, cost: float | None) -> Completion:
    return Completion(
        text="x", usage=Usage(prompt_tokens=prompt, completion_tokens=output), model="m", latency_s=0.1, cost_usd=cost
    )


def test_no_limits_never_stops() -> None:
    budget = Budget()
    for _ in range(100):
        budget.check()
        budget.charge(completion(1000, 1000, 1.0))
    assert budget.spent == Spend(calls=100, tokens=200_000, usd=pytest.approx(100.0))


@pytest.mark.parametrize(
    ("limits", "limit", "message"),
    [
        ({"max_calls": 2}, "max_calls", "2 calls made, max_calls is 2"),
        ({"max_tokens": 250}, "max_tokens", "300 tokens used, max_tokens is 250"),
        ({"max_usd": 0.02}, "max_usd", r"\$0.0200 spent, max_usd is \$0.0200"),
    ],
)
def test_each_limit_stops_the_next_call(limits: dict, limit: str, message: str) -> None:
    budget = Budget(**limits)
    budget.check()
    budget.charge(completion(100, 50, 0.01))
    budget.check()  # one call made: under every limit here
    budget.charge(completion(100, 50, 0.01))
    with pytest.raises(BudgetExceeded, match=message) as caught:
        budget.check()
    assert caught.value.limit == limit


def test_the_wall_clock_limit() -> None:
    now = [0.0]
    budget = Budget(max_wall_s=60, clock=lambda: now[0])
    now[0] = 59.0
    budget.check()
    now[0] = 61.0
    with pytest.raises(BudgetExceeded, match="time budget reached: 61 s elapsed") as caught:
        budget.check()
    assert caught.value.limit == "max_wall_s"


def test_a_resumed_run_starts_from_what_it_spent() -> None:
    budget = Budget(max_calls=10, spent=Spend(calls=10, tokens=5, usd=0.5))
    with pytest.raises(BudgetExceeded, match="10 calls made"):
        budget.check()


def test_calls_without_a_price_count_tokens_and_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    budget = Budget(max_usd=1.0)
    budget.charge(completion(10, 10, None))
    budget.charge(completion(10, 10, None))
    assert budget.spent == Spend(calls=2, tokens=40, usd=0.0)
    assert caplog.text.count("has no price") == 1
