"""A local Gemini endpoint speaking the REST shape google-genai uses.

``POST /{version}/models/{model}:generateContent`` with a JSON body of ``contents``,
``systemInstruction`` and ``generationConfig``; the reply carries ``candidates`` and
``usageMetadata``. Replies are scripted per role (read from the ``Task: <role>.`` line
of the system instruction) and every request is recorded, model name included, so a
test can prove which tier served which role. Point the real client at ``base_url``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._endpoint import ScriptedEndpoint, ScriptedServer

_PATH = re.compile(r"^/(?P<version>[^/]+)/models/(?P<model>[^/:]+):generateContent$")
_ROLE = re.compile(r"Task: (?P<role>\w+)\.")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer: candidate text with token counts, or an HTTP error (whose
    message quotes the request's text when ``echo`` is set, as some endpoints do)."""

    text: str = ""
    status: int = 200
    delay_s: float = 0.0
    input_tokens: int = 20
    output_tokens: int = 8
    echo: bool = False

    @classmethod
    def json(cls, value: object, **kwargs: Any) -> Reply:
        """A well-formed JSON answer."""
        return cls(text=json.dumps(value), **kwargs)

    @classmethod
    def error(cls, status: int, **kwargs: Any) -> Reply:
        """A Google-style error body with this HTTP status."""
        return cls(status=status, **kwargs)


@dataclass(frozen=True)
class RecordedRequest:
    """What the client sent: path parts, role, API key header and the JSON body."""

    version: str
    model: str
    role: str | None
    api_key: str | None
    body: dict[str, Any]

    @property
    def system_text(self) -> str:
        parts = self.body.get("systemInstruction", {}).get("parts", [])
        return "".join(p.get("text", "") for p in parts)

    @property
    def turns(self) -> list[tuple[str, str]]:
        """(role, text) of every content turn, in order."""
        return [
            (c.get("role", ""), "".join(p.get("text", "") for p in c.get("parts", [])))
            for c in self.body.get("contents", [])
        ]

    @property
    def generation_config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.body.get("generationConfig", {})
        return config


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        script = self.server.script
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        match = _PATH.match(self.path.split("?", 1)[0])
        if match is None:
            self._send(404, _error_body(404, "unknown path"))
            return
        body = json.loads(raw or b"{}")
        system = "".join(
            p.get("text", "") for p in body.get("systemInstruction", {}).get("parts", [])
        )
        role_match = _ROLE.search(system)
        role = role_match.group("role") if role_match else None
        recorded = RecordedRequest(
            match.group("version"),
            match.group("model"),
            role,
            self.headers.get("x-goog-api-key"),
            body,
        )
        reply: Reply | None = script.record(recorded)
        if reply is None:
            self._send(500, _error_body(500, f"no scripted reply for role {role}"))
            return
        if reply.delay_s and script.stopping.wait(reply.delay_s):
            return
        if reply.status != 200:
            message = "scripted failure"
            if reply.echo:
                message += ": " + " ".join(text for _, text in recorded.turns)
            self._send(reply.status, _error_body(reply.status, message))
            return
        self._send(
            200,
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": reply.text}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": reply.input_tokens,
                    "candidatesTokenCount": reply.output_tokens,
                    "totalTokenCount": reply.input_tokens + reply.output_tokens,
                },
                "modelVersion": recorded.model,
                "responseId": f"fake-{len(script.requests)}",
            },
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {
            "code": status,
            "message": message,
            "status": _STATUS_NAMES.get(status, "UNKNOWN"),
        }
    }


class FakeGemini(ScriptedEndpoint[Reply, RecordedRequest]):
    """The fake endpoint: ``script()`` replies per role, read ``requests`` afterwards."""

    handler = _Handler

    def __enter__(self) -> FakeGemini:
        self.start()
        return self
