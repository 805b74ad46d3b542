"""A local OpenAI-compatible chat-completions endpoint, the wire Ollama, vLLM, llama.cpp
server and LM Studio speak.

``POST /v1/chat/completions`` with ``model``, ``messages`` and perhaps ``response_format``
and ``stream``; the reply is a ``chat.completion`` (``choices[0].message.content`` and
``usage``) or, when the request streams, server-sent events (``data:`` chunks carrying
``choices[0].delta.content``, a usage chunk, then ``data: [DONE]``). Replies are scripted
per role (read from the ``Task: <role>.`` line of the system message) and every request is
recorded, headers included, so a test can prove which model served which role and what
authorization went out. Point the real provider at ``base_url``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._endpoint import ScriptedEndpoint, ScriptedServer

_ROLE = re.compile(r"Task: (?P<role>\w+)\.")


@dataclass(frozen=True)
class Reply:
    """One scripted answer: content with token counts, or an HTTP error (with a
    ``Retry-After`` when ``retry_after`` is set). Streamed, the content goes out in
    ``chunks`` pieces; ``cut`` ends the stream without ``[DONE]``."""

    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    input_tokens: int = 20
    output_tokens: int = 8
    retry_after: str | None = None
    chunks: int = 4
    cut: bool = False

    @classmethod
    def json(cls, value: object, **kwargs: Any) -> Reply:
        """A well-formed JSON answer."""
        return cls(text=json.dumps(value), **kwargs)

    @classmethod
    def error(cls, status: int, **kwargs: Any) -> Reply:
        """An OpenAI-style error body with this HTTP status."""
        return cls(status=status, **kwargs)


@dataclass(frozen=True)
class RecordedRequest:
    """What the client sent: path, role, headers and the JSON body."""

    path: str
    role: str | None
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def system_text(self) -> str:
        return "".join(
            str(m.get("content", "")) for m in self.messages if m.get("role") == "system"
        )

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def turns(self) -> list[tuple[str, str]]:
        """(role, content) of every non-system message, in order."""
        return [
            (str(m.get("role", "")), str(m.get("content", "")))
            for m in self.messages
            if m.get("role") != "system"
        ]


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        script = self.server.script
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if self.path.split("?", 1)[0] != "/v1/chat/completions":
            self._send(404, _error_body(404, "unknown path"))
            return
        body = json.loads(raw or b"{}")
        system = "".join(
            str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system"
        )
        role_match = _ROLE.search(system)
        role = role_match.group("role") if role_match else None
        recorded = RecordedRequest(
            self.path, role, {k.lower(): v for k, v in self.headers.items()}, body
        )
        reply: Reply | None = script.record(recorded)
        if reply is None:
            self._send(500, _error_body(500, f"no scripted reply for role {role}"))
            return
        if reply.delay_s and script.stopping.wait(reply.delay_s):
            return
        if reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after else {}
            self._send(reply.status, _error_body(reply.status, "scripted failure"), headers)
            return
        if body.get("stream"):
            self._stream(recorded, reply)
            return
        self._send(
            200,
            {
                "id": f"chatcmpl-{len(script.requests)}",
                "object": "chat.completion",
                "model": recorded.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(reply),
            },
        )

    def _stream(self, recorded: RecordedRequest, reply: Reply) -> None:
        size = max(1, -(-len(reply.text) // max(reply.chunks, 1)))
        pieces = [reply.text[i : i + size] for i in range(0, len(reply.text), size)]
        events: list[dict[str, Any]] = [
            {
                "object": "chat.completion.chunk",
                "model": recorded.model,
                "choices": [{"index": 0, "delta": {"role": "assistant"}}],
            }
        ]
        events += [
            {
                "object": "chat.completion.chunk",
                "model": recorded.model,
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
            }
            for piece in pieces
        ]
        events.append({"object": "chat.completion.chunk", "choices": [], "usage": _usage(reply)})
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events[: len(events) // 2] if reply.cut else events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            if not reply.cut:
                self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            return

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "code": status}}


class FakeOpenAI(ScriptedEndpoint[Reply, RecordedRequest]):
    """The fake endpoint: ``script()`` replies per role, read ``requests`` afterwards."""

    handler = _Handler
    # The ``OPENAI_BASE_URL`` to configure (with ``/v1``, as Ollama's is).
    path = "/v1"

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self
