"""Real HTTP servers on 127.0.0.1 that speak just enough OpenAI and Anthropic for the SDKs.

Each server answers from a script: a queue of `Scripted` replies, plain or streamed as server-sent events,
with faults (status codes, delays, connections dropped mid-body). It records what it received, so tests
assert on the wire format the SDKs really sent.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kforge.llm import RetryPolicy

# Backoffs short enough that a suite full of retries runs in seconds.
FAST_RETRY = RetryPolicy(retries=2, initial_delay_s=0.01, max_delay_s=0.05)


@dataclass
class Scripted:
    """One reply. `events` makes it a chunked SSE stream; `drop_after` cuts the connection after that many."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    events: list[str] | None = None
    drop_after: int | None = None
    raw: bytes | None = None  # sent as the body verbatim, for malformed replies


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedServer:
    def __init__(self) -> None:
        self.script: deque[Scripted] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Scripted) -> None:
        with self._lock:
            self.script.extend(replies)

    def _next(self, request: Received) -> Scripted:
        with self._lock:
            self.received.append(request)
            if self.script:
                return self.script.popleft()
        return Scripted(status=599, body={"error": {"message": "test server: script exhausted"}})

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # wakes handlers that are sleeping out a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real API servers do

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length) if length else b""
            request = Received(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else {},
            )
            reply = server._next(request)
            if reply.delay_s and server._stop.wait(reply.delay_s):
                return
            try:
                if reply.events is not None:
                    self._stream(reply)
                else:
                    self._plain(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (a timeout): nothing to answer

        def _plain(self, reply: Scripted) -> None:
            data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Scripted) -> None:
            assert reply.events is not None
            self.send_response(reply.status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for i, event in enumerate(reply.events):
                if reply.drop_after is not None and i == reply.drop_after:
                    self.wfile.flush()
                    # No terminating chunk: the client sees the body end mid-message.
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                data = event.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


def closed_port_url() -> str:
    """A URL on which nothing listens, for 'server unreachable'."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# OpenAI Chat Completions


def openai_completion(
    text: str, *, model: str = "gpt-test", prompt_tokens: int = 11, completion_tokens: int = 7
) -> Scripted:
    return Scripted(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def openai_stream_events(
    pieces: list[str], *, model: str = "gpt-test", prompt_tokens: int = 11, completion_tokens: int = 7
) -> list[str]:
    """The `data:` events of a streamed chat completion with usage, ending in [DONE]."""

    def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
        data = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
            "choices": choices,
            "usage": usage,
        }
        return f"data: {json.dumps(data)}\n\n"

    events = [chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
    events += [chunk([{"index": 0, "delta": {"content": p}, "finish_reason": None}]) for p in pieces]
    events.append(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    events.append(chunk([], usage))
    events.append("data: [DONE]\n\n")
    return events


def openai_stream(pieces: list[str], **kw: Any) -> Scripted:
    return Scripted(events=openai_stream_events(pieces, **kw))


def openai_error(status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None):
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    return Scripted(status=status, body=body, headers=headers or {})


# Anthropic Messages


def anthropic_message(
    text: str, *, model: str = "claude-test", input_tokens: int = 13, output_tokens: int = 5
) -> Scripted:
    return Scripted(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    )


def anthropic_stream_events(
    pieces: list[str], *, model: str = "claude-test", input_tokens: int = 13, output_tokens: int = 5
) -> list[str]:
    """The named events of a streamed message, as the Messages API sends them (a ping included)."""

    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    events = [
        event("message_start", {"type": "message_start", "message": start}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        event("ping", {"type": "ping"}),
    ]
    events += [
        event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    events += [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_stream(pieces: list[str], **kw: Any) -> Scripted:
    return Scripted(events=anthropic_stream_events(pieces, **kw))


def anthropic_error(status: int, kind: str, message: str, *, headers: dict[str, str] | None = None) -> Scripted:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return Scripted(status=status, body=body, headers=headers or {})
