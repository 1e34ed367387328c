"""API keys never reach the database, the logs or an error message."""

import logging
from pathlib import Path

import pytest
from llm_servers import FAST_RETRY, ScriptedServer, anthropic_message, openai_completion, openai_error, openai_stream

from kforge.config import load_settings
from kforge.llm import AuthenticationFailed, Message, make_chat_model
from kforge.pipelines.recording import RecordingChatModel
from kforge.store import Store

OPENAI_KEY = "sk-kforge-DISTINCTIVE-openai-7f3a9c1e5b"
ANTHROPIC_KEY = "sk-ant-kforge-DISTINCTIVE-2d8e4b6a"


def test_keys_appear_nowhere_in_the_database_logs_or_errors(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    settings = load_settings({"model": "openai:gpt-test", "base_url": server.url + "/v1"}, cwd=tmp_path)
    db = tmp_path / "kforge.db"

    with Store(db) as store:
        run = store.create_run(command="optimize", model=settings.model, settings=settings.for_record())
        openai_llm = RecordingChatModel(settings.chat_model(), store, run.id)
        server.push(openai_completion("plain"), openai_stream(["stre", "amed"]))
        openai_llm.complete([Message.user("hello")], max_tokens=10)
        openai_llm.complete([Message.user("again")], max_tokens=10, on_delta=lambda _: None)

        anthropic = make_chat_model("anthropic:claude-test", base_url=server.url, retry=FAST_RETRY)
        server.push(anthropic_message("hi"))
        RecordingChatModel(anthropic, store, run.id).complete([Message.user("hello")], max_tokens=10)

        # A server that echoes the key it refuses must not get it into our message.
        server.push(openai_error(401, f"Incorrect API key provided: {OPENAI_KEY}"))
        with pytest.raises(AuthenticationFailed) as caught:
            openai_llm.complete([Message.user("once more")], max_tokens=10)
        assert OPENAI_KEY not in str(caught.value) and "***" in str(caught.value)
        # Nor into the log line of a retry.
        server.push(openai_error(500, f"upstream rejected {OPENAI_KEY}"), openai_completion("retried"))
        assert openai_llm.complete([Message.user("last")], max_tokens=10).text == "retried"
        assert "upstream rejected ***" in caplog.text
        assert len(store.llm_calls_of(run.id)) == 4

    assert [r.headers.get("authorization") for r in server.received][:2] == [f"Bearer {OPENAI_KEY}"] * 2
    for path in tmp_path.glob("kforge.db*"):  # the database, its WAL and shared-memory files
        data = path.read_bytes()
        for key in (OPENAI_KEY, ANTHROPIC_KEY):
            assert key.encode() not in data, f"{key} found in {path.name}"
    assert OPENAI_KEY not in caplog.text and ANTHROPIC_KEY not in caplog.text
