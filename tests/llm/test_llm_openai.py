"""`openai:MODEL` against a real local server speaking the Chat Completions API."""

import base64
import logging
import time

import pytest
from llm_servers import (
    FAST_RETRY,
    Scripted,
    ScriptedServer,
    closed_port_url,
    openai_completion,
    openai_error,
    openai_stream,
    openai_stream_events,
)

from kforge.llm import (
    AuthenticationFailed,
    BadRequest,
    ChatModel,
    LLMTimeout,
    MalformedResponse,
    Message,
    MissingAPIKey,
    Price,
    PriceTable,
    RateLimited,
    RetryPolicy,
    ServerError,
    ServerUnreachable,
    UnknownModel,
    make_chat_model,
)

KEY = "sk-test-openai"


def model_on(server: ScriptedServer, *, timeout_s: float = 5.0, **kw: object) -> ChatModel:
    return make_chat_model(
        "openai:gpt-test", base_url=server.url + "/v1", api_key=KEY, timeout_s=timeout_s, retry=FAST_RETRY, **kw
    )


def test_a_plain_completion(server: ScriptedServer) -> None:
    server.push(openai_completion("def kernel(): ...", prompt_tokens=120, completion_tokens=30))
    answer = model_on(server).complete(
        [Message.system("You write kernels."), Message.user("Write one.")], max_tokens=256
    )
    assert answer.text == "def kernel(): ..."
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (120, 30)  # type: ignore[union-attr]
    assert answer.model == "gpt-test" and answer.stop_reason == "stop" and not answer.cached
    assert answer.cost_usd is None  # no price for gpt-test
    assert answer.latency_s > 0

    [sent] = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You write kernels."},
        {"role": "user", "content": "Write one."},
    ]
    assert sent.body["max_tokens"] == 256  # compatible servers get max_tokens
    assert "temperature" not in sent.body  # None leaves the server's default
    assert "stream" not in sent.body


def test_temperature_is_sent_when_given(server: ScriptedServer) -> None:
    server.push(openai_completion("ok"))
    model_on(server).complete([Message.user("hi")], max_tokens=5, temperature=0.3)
    assert server.received[0].body["temperature"] == 0.3


def test_the_cost_comes_from_the_price_table(server: ScriptedServer) -> None:
    server.push(openai_completion("ok", prompt_tokens=1_000_000, completion_tokens=500_000))
    prices = PriceTable({("openai", "gpt-test"): Price(input=2.0, output=8.0)})
    answer = model_on(server, prices=prices).complete([Message.user("hi")], max_tokens=5)
    assert answer.cost_usd == pytest.approx(2.0 + 4.0)


def test_images_are_sent_as_data_urls(server: ScriptedServer) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    server.push(openai_completion("a roofline"))
    model_on(server).complete([Message.user("What does this chart show?", png)], max_tokens=50)
    [part_text, part_image] = server.received[0].body["messages"][0]["content"]
    assert part_text == {"type": "text", "text": "What does this chart show?"}
    assert part_image["type"] == "image_url"
    prefix = "data:image/png;base64,"
    assert part_image["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(part_image["image_url"]["url"][len(prefix) :]) == png


def test_streaming_passes_each_piece_to_the_callback(server: ScriptedServer) -> None:
    server.push(openai_stream(["def ", "kernel", "(): ..."], prompt_tokens=50, completion_tokens=9))
    pieces: list[str] = []
    answer = model_on(server).complete([Message.user("go")], max_tokens=100, on_delta=pieces.append)
    assert pieces == ["def ", "kernel", "(): ..."]
    assert answer.text == "def kernel(): ..."
    assert answer.usage is not None and answer.usage.total_tokens == 59
    assert answer.stop_reason == "stop"
    sent = server.received[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_429_waits_for_retry_after_then_succeeds(server: ScriptedServer, caplog: pytest.LogCaptureFixture) -> None:
    server.push(openai_error(429, "Rate limit reached", headers={"retry-after": "0.4"}), openai_completion("done"))
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        answer = model_on(server).complete([Message.user("hi")], max_tokens=5)
    waited = time.monotonic() - started
    assert answer.text == "done"
    assert len(server.received) == 2
    assert 0.4 <= waited < 2.0  # the server's 0.4 s, not the test policy's 0.01 s backoff
    assert "rate limited" in caplog.text and "retry 1 of 2 in 0.4 s" in caplog.text


def test_500_then_success(server: ScriptedServer) -> None:
    server.push(openai_error(500, "internal error"), openai_completion("recovered"))
    assert model_on(server).complete([Message.user("hi")], max_tokens=5).text == "recovered"
    assert len(server.received) == 2


def test_persistent_5xx_gives_up_with_one_line(server: ScriptedServer) -> None:
    server.push(*[openai_error(503, "overloaded")] * 3)
    with pytest.raises(ServerError) as caught:
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert len(server.received) == 3  # one try and FAST_RETRY's two retries
    message = str(caught.value)
    assert "HTTP 503: overloaded" in message and "gave up after 2 retries" in message
    assert "\n" not in message


def test_a_retry_after_longer_than_the_policy_allows_fails_at_once(server: ScriptedServer) -> None:
    server.push(openai_error(429, "quota", headers={"retry-after": "3600"}))
    started = time.monotonic()
    with pytest.raises(RateLimited, match="asks to wait 3600 s"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert time.monotonic() - started < 1.0
    assert len(server.received) == 1


def test_a_reply_slower_than_the_timeout_is_a_clear_timeout(server: ScriptedServer) -> None:
    server.push(*[Scripted(delay_s=5.0, body={})] * 3)
    model = model_on(server, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"no answer for 0.3 s; raise the timeout"):
        model.complete([Message.user("hi")], max_tokens=5)
    assert time.monotonic() - started < 2.5  # three tries of 0.3 s and short backoffs, not the 5 s delay
    assert len(server.received) == 3


def test_malformed_json_is_reported_not_retried(server: ScriptedServer) -> None:
    server.push(Scripted(raw=b'{"id": "chatcmpl-1", "choices": ['))
    with pytest.raises(MalformedResponse, match="not valid JSON"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert len(server.received) == 1


def test_json_of_the_wrong_shape_is_malformed(server: ScriptedServer) -> None:
    server.push(Scripted(body={"hello": "world"}))
    with pytest.raises(MalformedResponse, match="no choices"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)


def test_a_stream_dropped_midway_is_retried_from_the_start(server: ScriptedServer) -> None:
    dropped = Scripted(events=openai_stream_events(["par", "tial", " never ends"]), drop_after=3)
    server.push(dropped, openai_stream(["whole ", "answer"]))
    pieces: list[str] = []
    answer = model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=pieces.append)
    assert answer.text == "whole answer"
    assert pieces == ["par", "tial", "whole ", "answer"]  # progress restarts with the retry
    assert len(server.received) == 2


def test_a_stream_that_ends_without_finishing_counts_as_dropped(server: ScriptedServer) -> None:
    # A clean end of body, but no finish_reason: a proxy cut the reply short.
    cut = Scripted(events=openai_stream_events(["half"])[:2])
    server.push(cut, cut, cut)
    with pytest.raises(ServerUnreachable, match="stream ended before the reply was complete"):
        model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=lambda _: None)
    assert len(server.received) == 3


def test_an_invalid_key_is_401_and_not_retried(server: ScriptedServer) -> None:
    server.push(openai_error(401, "Incorrect API key provided", code="invalid_api_key"))
    with pytest.raises(AuthenticationFailed) as caught:
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert "refused the API key (HTTP 401: Incorrect API key provided); check OPENAI_API_KEY" in str(caught.value)
    assert len(server.received) == 1


def test_an_unknown_model_is_404(server: ScriptedServer) -> None:
    server.push(openai_error(404, "The model `gpt-test` does not exist", code="model_not_found"))
    with pytest.raises(UnknownModel, match=r"no such model or endpoint .*does not exist.*check the model name"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert len(server.received) == 1


def test_a_bad_request_is_400(server: ScriptedServer) -> None:
    server.push(openai_error(400, "max_tokens is too large"))
    with pytest.raises(BadRequest, match=r"request rejected \(HTTP 400: max_tokens is too large"):
        model_on(server).complete([Message.user("hi")], max_tokens=10**9)


def test_a_missing_key_fails_before_anything_is_sent(server: ScriptedServer) -> None:
    with pytest.raises(MissingAPIKey, match="set OPENAI_API_KEY"):
        make_chat_model("openai:gpt-test", base_url=server.url + "/v1")
    assert server.received == []


def test_key_and_base_url_come_from_the_sdk_variables(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    server.push(openai_completion("hi"))
    model = make_chat_model("openai:gpt-test", retry=FAST_RETRY)
    assert model.spec.base_url == server.url + "/v1"
    model.complete([Message.user("hi")], max_tokens=5)
    assert server.received[0].headers["authorization"] == "Bearer sk-from-env"


def test_an_unreachable_server_is_one_clear_line() -> None:
    model = make_chat_model(
        "openai:gpt-test", base_url=closed_port_url() + "/v1", api_key=KEY, timeout_s=2, retry=RetryPolicy(retries=0)
    )
    with pytest.raises(ServerUnreachable, match=r"cannot connect .*check that the server is running"):
        model.complete([Message.user("hi")], max_tokens=5)


def test_the_official_service_gets_max_completion_tokens() -> None:
    # No request is made: only how the model would ask is checked.
    model = make_chat_model("openai:gpt-test", api_key=KEY)
    assert model.spec.base_url == "https://api.openai.com/v1"
    assert model._max_tokens_field == "max_completion_tokens"  # type: ignore[attr-defined]
