"""What the scripted model endpoints share: a local HTTP server on a free port, replies
queued per role, every request recorded. Each wire format (``gemini``, ``openai``) brings
its own handler, reply and request types; the lifecycle and the script are here once."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

ReplyT = TypeVar("ReplyT")
RequestT = TypeVar("RequestT", bound="HasRole")


class HasRole(Protocol):
    @property
    def role(self) -> str | None: ...


@dataclass
class Script(Generic[ReplyT, RequestT]):
    """Replies queued per role and the requests recorded, shared with the handler."""

    replies: dict[str, deque[ReplyT]] = field(default_factory=dict)
    requests: list[RequestT] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def record(self, request: RequestT) -> ReplyT | None:
        """Record ``request`` and take the next reply for its role (``*`` answers any
        role without a queue of its own); None when nothing is scripted."""
        with self.lock:
            self.requests.append(request)
            queue = self.replies.get(request.role or "") or self.replies.get("*")
            return queue.popleft() if queue else None


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script[Any, Any], handler: type[BaseHTTPRequestHandler]) -> None:
        self.script = script
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out closed its socket: nothing to report.
        return


class ScriptedEndpoint(Generic[ReplyT, RequestT]):
    """The fake endpoint: ``script()`` replies per role, read ``requests`` afterwards.
    Subclasses name their ``handler`` and the ``path`` their clients are pointed at."""

    handler: type[BaseHTTPRequestHandler]
    path = ""

    def __init__(self) -> None:
        self._script: Script[ReplyT, RequestT] = Script()
        self._server: ScriptedServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.path}"

    @property
    def requests(self) -> list[RequestT]:
        with self._script.lock:
            return list(self._script.requests)

    def requests_for(self, role: str) -> list[RequestT]:
        return [r for r in self.requests if r.role == role]

    def script(self, role: str, *replies: ReplyT) -> None:
        """Queue replies for a role (``*`` answers any role without its own queue)."""
        with self._script.lock:
            self._script.replies.setdefault(role, deque()).extend(replies)

    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._script.lock:
            return sum(len(q) for q in self._script.replies.values())

    def start(self) -> ScriptedEndpoint[ReplyT, RequestT]:
        self._server = ScriptedServer(self._script, self.handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._script.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedEndpoint[ReplyT, RequestT]:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
