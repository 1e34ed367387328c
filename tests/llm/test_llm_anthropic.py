"""`anthropic:MODEL` against a real local server speaking the Messages API."""

import base64
import time

import pytest
from llm_servers import (
    FAST_RETRY,
    Scripted,
    ScriptedServer,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    anthropic_stream_events,
)

from kforge.llm import (
    AuthenticationFailed,
    ChatModel,
    LLMTimeout,
    MalformedResponse,
    Message,
    MissingAPIKey,
    Price,
    PriceTable,
    ServerError,
    UnknownModel,
    make_chat_model,
)

KEY = "sk-ant-test"


def model_on(server: ScriptedServer, *, timeout_s: float = 5.0, **kw: object) -> ChatModel:
    return make_chat_model(
        "anthropic:claude-test", base_url=server.url, api_key=KEY, timeout_s=timeout_s, retry=FAST_RETRY, **kw
    )


def sent_key(headers: dict[str, str]) -> str | None:
    # SDK releases differ: older ones send x-api-key, newer ones a bearer token.
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ") or None


def test_a_plain_message_with_the_system_prompt_beside_the_turns(server: ScriptedServer) -> None:
    server.push(anthropic_message("__global__ void k() {}", input_tokens=200, output_tokens=40))
    answer = model_on(server).complete(
        [
            Message.system("You write CUDA."),
            Message.user("Write a kernel."),
            Message.assistant("Which one?"),
            Message.user("Any."),
        ],
        max_tokens=512,
        temperature=0.5,
    )
    assert answer.text == "__global__ void k() {}"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (200, 40)  # type: ignore[union-attr]
    assert (answer.model, answer.stop_reason, answer.cost_usd) == ("claude-test", "end_turn", None)

    [sent] = server.received
    assert sent.path == "/v1/messages"
    assert sent_key(sent.headers) == KEY
    assert "anthropic-version" in sent.headers
    assert sent.body["system"] == "You write CUDA."
    assert sent.body["messages"] == [
        {"role": "user", "content": "Write a kernel."},
        {"role": "assistant", "content": "Which one?"},
        {"role": "user", "content": "Any."},
    ]
    assert (sent.body["model"], sent.body["max_tokens"], sent.body["temperature"]) == ("claude-test", 512, 0.5)


def test_images_are_sent_as_base64_sources(server: ScriptedServer) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    server.push(anthropic_message("memory bound"))
    model_on(server).complete([Message.user("Read this profile.", png)], max_tokens=50)
    [text, image] = server.received[0].body["messages"][0]["content"]
    assert text == {"type": "text", "text": "Read this profile."}
    assert image["type"] == "image"
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == png


def test_images_in_the_system_prompt_are_refused_before_sending(server: ScriptedServer) -> None:
    system_with_image = Message(role="system", content=Message.user("x", b"png").content)
    with pytest.raises(ValueError, match="no images in the system prompt"):
        model_on(server).complete([system_with_image, Message.user("hi")], max_tokens=5)
    assert server.received == []


def test_streaming_passes_each_piece_and_counts_tokens(server: ScriptedServer) -> None:
    server.push(anthropic_stream(["__global__ ", "void k", "() {}"], input_tokens=70, output_tokens=12))
    pieces: list[str] = []
    prices = PriceTable({("anthropic", "claude-test"): Price(input=3.0, output=15.0)})
    answer = model_on(server, prices=prices).complete([Message.user("go")], max_tokens=100, on_delta=pieces.append)
    assert pieces == ["__global__ ", "void k", "() {}"]
    assert answer.text == "__global__ void k() {}"
    assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (70, 12)
    assert answer.cost_usd == pytest.approx((70 * 3.0 + 12 * 15.0) / 1e6)
    assert answer.stop_reason == "end_turn"
    assert server.received[0].body["stream"] is True


def test_429_with_retry_after_ms_waits_then_succeeds(server: ScriptedServer) -> None:
    server.push(
        anthropic_error(429, "rate_limit_error", "Number of requests exceeded", headers={"retry-after-ms": "300"}),
        anthropic_message("done"),
    )
    started = time.monotonic()
    assert model_on(server).complete([Message.user("hi")], max_tokens=5).text == "done"
    assert 0.3 <= time.monotonic() - started < 2.0
    assert len(server.received) == 2


def test_overloaded_529_then_success(server: ScriptedServer) -> None:
    server.push(anthropic_error(529, "overloaded_error", "Overloaded"), anthropic_message("recovered"))
    assert model_on(server).complete([Message.user("hi")], max_tokens=5).text == "recovered"
    assert len(server.received) == 2


def test_an_error_event_inside_a_stream_is_a_retryable_server_error(server: ScriptedServer) -> None:
    error = 'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    broken = Scripted(events=[*anthropic_stream_events(["a"])[:3], error])
    server.push(broken, anthropic_stream(["fine"]))
    assert model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=lambda _: None).text == "fine"

    server.push(broken, broken, broken)
    with pytest.raises(ServerError, match="error mid-reply: Overloaded"):
        model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=lambda _: None)


def test_a_reply_slower_than_the_timeout_is_a_clear_timeout(server: ScriptedServer) -> None:
    server.push(*[Scripted(delay_s=5.0, body={})] * 3)
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"no answer for 0\.3 s"):
        model_on(server, timeout_s=0.3).complete([Message.user("hi")], max_tokens=5)
    assert time.monotonic() - started < 2.5


def test_malformed_json_is_reported(server: ScriptedServer) -> None:
    server.push(Scripted(raw=b'{"type": "message", "content": [{"type": "te'))
    with pytest.raises(MalformedResponse, match="not valid JSON"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)


def test_a_stream_dropped_midway_is_retried(server: ScriptedServer) -> None:
    dropped = Scripted(events=anthropic_stream_events(["par", "tial"]), drop_after=5)
    server.push(dropped, anthropic_stream(["whole"]))
    pieces: list[str] = []
    answer = model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=pieces.append)
    assert answer.text == "whole"
    assert pieces == ["par", "tial", "whole"]
    assert len(server.received) == 2


def test_a_stream_without_message_stop_counts_as_dropped(server: ScriptedServer) -> None:
    cut = Scripted(events=anthropic_stream_events(["half"])[:4])  # ends cleanly after the first delta
    server.push(cut, anthropic_stream(["whole"]))
    assert model_on(server).complete([Message.user("hi")], max_tokens=5, on_delta=lambda _: None).text == "whole"


def test_an_invalid_key_is_401(server: ScriptedServer) -> None:
    server.push(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(AuthenticationFailed, match=r"HTTP 401: invalid x-api-key\); check ANTHROPIC_API_KEY"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)
    assert len(server.received) == 1


def test_an_unknown_model_is_404(server: ScriptedServer) -> None:
    server.push(anthropic_error(404, "not_found_error", "model: claude-test"))
    with pytest.raises(UnknownModel, match="HTTP 404: model: claude-test"):
        model_on(server).complete([Message.user("hi")], max_tokens=5)


def test_a_missing_key_fails_before_anything_is_sent(server: ScriptedServer) -> None:
    with pytest.raises(MissingAPIKey, match="set ANTHROPIC_API_KEY"):
        make_chat_model("anthropic:claude-test", base_url=server.url)
    assert server.received == []


def test_key_and_base_url_come_from_the_sdk_variables(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.push(anthropic_message("hi"))
    model = make_chat_model("anthropic:claude-test", retry=FAST_RETRY)
    model.complete([Message.user("hi")], max_tokens=5)
    assert sent_key(server.received[0].headers) == "sk-ant-from-env"
