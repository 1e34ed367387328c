"""A run's chat model: every call recorded, repeats answered from the store, the budget kept."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.llm import Budget, BudgetExceeded, Message, Price, PriceTable, ServerError, make_chat_model
from kforge.pipelines.recording import RecordingChatModel
from kforge.store import Store
from tests.llm.llm_servers import FAST_RETRY, ScriptedServer, openai_completion, openai_error

PROMPT = [Message.system("You write kernels."), Message.user("Make relu fast.")]
PRICES = PriceTable({("openai", "gpt-test"): Price(input=1.0, output=2.0)})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "kforge.db") as store:
        yield store


def recorder(server: ScriptedServer, store: Store, **kw: object) -> RecordingChatModel:
    model = make_chat_model(
        "openai:gpt-test", base_url=server.url + "/v1", api_key="sk-test", retry=FAST_RETRY, prices=PRICES
    )
    run = store.create_run(command="optimize", model=str(model.spec))
    return RecordingChatModel(model, store, run.id, **kw)  # type: ignore[arg-type]


def test_every_real_call_is_recorded(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("kernel v1", prompt_tokens=1000, completion_tokens=500))
    llm = recorder(server, store)
    answer = llm.complete(PROMPT, max_tokens=100, temperature=0.2)

    [call] = store.llm_calls_of(llm.run_id)
    assert (call.response_text, call.model, call.provider) == ("kernel v1", "gpt-test", "openai")
    assert (call.prompt_tokens, call.completion_tokens, call.cache_hit) == (1000, 500, False)
    assert call.cost_usd == pytest.approx(answer.cost_usd) == pytest.approx(0.002)
    assert call.request["messages"][1] == {"role": "user", "content": "Make relu fast."}
    assert (call.request["max_tokens"], call.request["temperature"]) == (100, 0.2)
    assert call.request["model"] == "openai:gpt-test"
    assert store.costs_of(llm.run_id).cost_usd == pytest.approx(0.002)


def test_an_identical_request_is_answered_from_the_store(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("kernel v1"))
    recorder(server, store).complete(PROMPT, max_tokens=100)

    later = recorder(server, store)  # a new run, say a rerun of the same command
    deltas: list[str] = []
    answer = later.complete(PROMPT, max_tokens=100, on_delta=deltas.append)
    assert answer.text == "kernel v1" and answer.cached and answer.cost_usd == 0.0
    assert deltas == ["kernel v1"]  # progress still shows the answer
    assert len(server.received) == 1  # the server never saw the second request
    [hit] = store.llm_calls_of(later.run_id)
    assert hit.cache_hit and hit.response_text == "kernel v1"
    costs = store.costs_of(later.run_id)
    assert (costs.calls, costs.cached_calls, costs.cost_usd) == (0, 1, 0.0)


def test_a_different_request_is_not_a_hit(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("a"), openai_completion("b"), openai_completion("c"))
    llm = recorder(server, store)
    llm.complete(PROMPT, max_tokens=100)
    recorder(server, store).complete(PROMPT, max_tokens=101)
    recorder(server, store).complete([*PROMPT, Message.user("and more")], max_tokens=100)
    assert len(server.received) == 3


def test_asking_twice_in_a_run_samples_twice_and_a_rerun_replays_both(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("sample 1"), openai_completion("sample 2"))
    first = recorder(server, store)
    assert [first.complete(PROMPT, max_tokens=100).text for _ in range(2)] == ["sample 1", "sample 2"]

    rerun = recorder(server, store)
    answers = [rerun.complete(PROMPT, max_tokens=100) for _ in range(2)]
    assert [a.text for a in answers] == ["sample 1", "sample 2"] and all(a.cached for a in answers)
    assert len(server.received) == 2


def test_use_cache_false_always_asks(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("first"), openai_completion("fresh"))
    recorder(server, store).complete(PROMPT, max_tokens=100)
    answer = recorder(server, store, use_cache=False).complete(PROMPT, max_tokens=100)
    assert answer.text == "fresh" and not answer.cached
    assert len(server.received) == 2


def test_the_budget_stops_before_the_call(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("one"), openai_completion("two"))
    llm = recorder(server, store, budget=Budget(max_calls=1))
    llm.complete(PROMPT, max_tokens=100)
    with pytest.raises(BudgetExceeded, match="max_calls is 1"):
        llm.complete([Message.user("another")], max_tokens=100)
    assert len(server.received) == 1  # the second request never left
    assert len(store.llm_calls_of(llm.run_id)) == 1


def test_a_dollar_budget_counts_real_calls_only(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("x", prompt_tokens=1_000_000, completion_tokens=0))
    recorder(server, store).complete(PROMPT, max_tokens=100)  # $1.00, in an earlier run
    budget = Budget(max_usd=0.5)
    llm = recorder(server, store, budget=budget)
    assert llm.complete(PROMPT, max_tokens=100).cached  # free: the budget is not touched
    assert budget.spent.calls == 0


def test_failed_calls_are_not_recorded(server: ScriptedServer, store: Store) -> None:
    server.push(*[openai_error(500, "down")] * 3)
    llm = recorder(server, store)
    with pytest.raises(ServerError):
        llm.complete(PROMPT, max_tokens=100)
    assert store.llm_calls_of(llm.run_id) == []


def test_calls_can_be_filed_under_an_attempt(server: ScriptedServer, store: Store) -> None:
    server.push(openai_completion("it is memory bound"))
    llm = recorder(server, store)
    attempt = store.record_attempt(llm.run_id, source="s", language="cpp", platform="cpu", made_by="generator")
    llm.for_attempt(attempt.id).complete([Message.user("Why is this slow?")], max_tokens=100)
    [call] = store.llm_calls_of(llm.run_id)
    assert call.attempt_id == attempt.id


def test_images_are_recorded_by_digest_not_bytes(server: ScriptedServer, store: Store) -> None:
    png = b"\x89PNG" + b"\x00" * 5000
    server.push(openai_completion("ok"))
    llm = recorder(server, store)
    llm.complete([Message.user("chart", png)], max_tokens=10)
    [call] = store.llm_calls_of(llm.run_id)
    image = call.request["messages"][0]["content"][1]
    assert image["type"] == "image" and image["bytes"] == len(png) and len(image["sha256"]) == 64
