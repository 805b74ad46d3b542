"""Starting service processes and waiting for them to serve: how ``tandem run`` supervises
the stack and how the harnesses under ``services/bench`` start the services they measure,
in one place below both (nothing here knows the command line).
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.common import Credentials

_HEALTH_OPTIONS = (
    # A server that is still importing refuses connections; reconnect quickly once it binds.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
)


_PR_SET_PDEATHSIG = 1


def parent_death_signal(sig: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive ``sig`` when the thread that started
    it exits (Linux only; None elsewhere). A supervisor killed with SIGKILL runs no clean-up
    of its own, so its children must notice by themselves."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()
    # Resolved before the fork: the child only calls it, loading nothing.
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), sig)

    return arm


def launch(
    module: str,
    env: Mapping[str, str],
    log_path: Path,
    *,
    die_with_parent: bool = False,
    args: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """Start ``python -m module`` with stdout and stderr appended to ``log_path``.

    The child gets its own session: a terminal's Ctrl-C reaches only the supervisor, which
    then stops the services in order, and its process group can be killed as a whole.
    ``die_with_parent``: the child gets SIGTERM (and drains) when the launching thread dies;
    launch from a thread that lives as long as the supervisor.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # Runs in the child between fork and exec: only a prctl call (see above).
            preexec_fn=parent_death_signal(signal.SIGTERM) if die_with_parent else None,  # noqa: PLW1509
        )


def health_channel(
    address: str, tls: Credentials | None = None, peer: str | None = None
) -> grpc.Channel:
    """A blocking channel for health checks: mutual TLS as ``tls`` (the supervisor's
    identity, which may call health only) to the service ``peer``, else plaintext."""
    if tls is None:
        return grpc.insecure_channel(address, options=_HEALTH_OPTIONS)
    credentials = grpc.ssl_channel_credentials(tls.ca, tls.key, tls.cert)
    options = [*_HEALTH_OPTIONS, ("grpc.ssl_target_name_override", peer or "localhost")]
    return grpc.secure_channel(address, credentials, options=options)


def wait_serving(
    address: str,
    timeout_s: float,
    *,
    alive: Callable[[], bool] = lambda: True,
    cancelled: threading.Event | None = None,
    tls: Credentials | None = None,
    peer: str | None = None,
    http: bool = False,
) -> None:
    """Block until the health service at ``address`` reports SERVING.

    Watches the standard health service (pushed status changes, not polling); checks at
    least once a second that the process is still ``alive``. Raises ``TimeoutError`` at
    the deadline and ``ProcessLookupError`` when the process has gone. ``http``: the
    process speaks HTTP/1.1 only (the HTTP/JSON face): ``GET /healthz`` answering 200.
    """
    deadline = time.monotonic() + timeout_s
    if http:
        _wait_http(address, deadline, timeout_s, alive, cancelled)
        return
    request = health_pb2.HealthCheckRequest()
    with health_channel(address, tls, peer) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            if not alive():
                raise ProcessLookupError(address)
            if cancelled is not None and cancelled.is_set():
                raise InterruptedError(address)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{address} did not report SERVING within {timeout_s:.0f} s")
            try:
                for reply in stub.Watch(request, timeout=min(remaining, 1.0), wait_for_ready=True):
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else None
                if code == grpc.StatusCode.UNAVAILABLE:
                    # Refused after connecting (the server is draining): do not spin.
                    time.sleep(0.05)
                elif code != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise


def _wait_http(
    address: str,
    deadline: float,
    timeout_s: float,
    alive: Callable[[], bool],
    cancelled: threading.Event | None,
) -> None:
    host, _, port = address.rpartition(":")
    while True:
        if not alive():
            raise ProcessLookupError(address)
        if cancelled is not None and cancelled.is_set():
            raise InterruptedError(address)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{address} did not answer /healthz within {timeout_s:.0f} s")
        connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=1.0)
        try:
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.1)


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the process group ``proc`` leads (it and anything it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
