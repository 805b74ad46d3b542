"""The grpc.aio server every service runs: health, reflection, interceptors, drain on signal."""

from __future__ import annotations

import asyncio
import logging
import math
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.common._event_loop import running_loop_kind
from services.common._interceptors import RuntimeInterceptor
from services.common._mtls import Trust
from services.common._settings import ServerSettings
from services.common._telemetry import Telemetry

_log = logging.getLogger("tandem.server")

Registrar = Callable[[Any, grpc.aio.Server], None]
DependencyCheck = Callable[[], Awaitable[bool]]


class GrpcServer:
    """One service process's server: register servicers, start, flip health, drain.

    Health reports NOT_SERVING for every registered service until ``set_serving`` is
    called, so a load balancer never routes to a process that is still loading. With
    ``watch_dependencies``, each registered service's own status (e.g.
    ``tandem.v1.RetrievalService``) also follows its dependencies, while the process-wide
    ``""`` status stays a liveness signal: a readiness probe that names the service takes
    a replica whose database is gone out of rotation without restarting it.

    ``first`` interceptors run before tracing and the runtime interceptor: for refusals
    that must cost next to nothing (the gateway's quota gate), so they get no span, no
    deadline scope and no access-log line.

    ``trust`` secure: the port takes only mutual-TLS callers from the deployment's CA and
    every handler first passes its caller guard (identity, signed tenant). None or
    plaintext: an insecure port (development, in-process harnesses).

    ``options``: further gRPC server options, after the shared ones.

    ``accept_principal``: handlers see the principal the request's headers name as
    ``current_principal`` (internal services; the guard has checked it against the signed
    token). The gateway passes False: there a header is a claim its key must be allowed.
    """

    def __init__(
        self,
        settings: ServerSettings,
        telemetry: Telemetry,
        *,
        first: Sequence[grpc.aio.ServerInterceptor] = (),
        trust: Trust | None = None,
        options: Sequence[tuple[str, Any]] = (),
        accept_principal: bool = True,
    ) -> None:
        self.settings = settings
        self.telemetry = telemetry
        self.trust = trust or Trust.plaintext()
        self.health = health.aio.HealthServicer()
        self._service_names: list[str] = []
        self._watcher: asyncio.Task[None] | None = None
        self._down: frozenset[str] = frozenset()
        self._port: int | None = None
        tracing = telemetry.server_interceptors()
        self.server = grpc.aio.server(
            interceptors=[
                *first,
                *tracing,
                RuntimeInterceptor(
                    settings.default_deadline_s,
                    telemetry.meter("tandem.rpc"),
                    carry_trace_context=not tracing,
                    guard=self.trust.guard(),
                    max_deadline_s=settings.max_deadline_s,
                    accept_principal=accept_principal,
                ),
            ],
            options=[
                ("grpc.max_send_message_length", settings.max_message_bytes),
                ("grpc.max_receive_message_length", settings.max_message_bytes),
                ("grpc.keepalive_time_ms", settings.keepalive_time_s * 1000),
                ("grpc.keepalive_timeout_ms", settings.keepalive_timeout_s * 1000),
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.so_reuseport", 0),
                # Clients reconnect (and re-resolve) at least every few minutes, so replicas
                # an autoscaler adds start taking traffic; the calls in flight run on to
                # their deadlines (the grace covers the longest), never cut midway.
                ("grpc.max_connection_age_ms", round(settings.max_connection_age_s * 1000)),
                (
                    "grpc.max_connection_age_grace_ms",
                    math.ceil(settings.connection_age_grace_s * 1000),
                ),
                *options,
            ],
            maximum_concurrent_rpcs=settings.max_concurrent_rpcs,
        )
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)

    def add_service(self, full_name: str, register: Registrar, servicer: Any) -> None:
        """Register a servicer under its proto full name (e.g. ``tandem.v1.EmbeddingService``)."""
        register(servicer, self.server)
        self._service_names.append(full_name)

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def address(self) -> str:
        return f"{self.settings.host}:{self.port}"

    async def start(self) -> int:
        """Bind, enable reflection and start NOT_SERVING; returns the bound port."""
        names = [
            *self._service_names,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        ]
        reflection.enable_server_reflection(names, self.server)
        where = f"{self.settings.host}:{self.settings.port}"
        credentials = self.trust.server_credentials()
        if credentials is None:
            self._port = self.server.add_insecure_port(where)
        else:
            self._port = self.server.add_secure_port(where, credentials)
        if self._port == 0:
            raise RuntimeError(f"could not bind {self.settings.host}:{self.settings.port}")
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.server.start()
        _log.info(
            "listening",
            extra={
                "fields": {
                    "port": self._port,
                    "services": self._service_names,
                    "transport": "mtls" if self.trust.secure else "plaintext",
                    "event_loop": running_loop_kind(),
                }
            },
        )
        return self._port

    async def set_serving(self, serving: bool = True) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await self._set_all(status)

    def watch_dependencies(
        self, checks: dict[str, DependencyCheck], interval_s: float = 2.0
    ) -> None:
        """Re-check ``checks`` every ``interval_s``: any failing one turns the registered
        services NOT_SERVING (one warning naming it), all passing turns them back."""
        if self._watcher is not None:
            raise RuntimeError("dependencies are already watched")
        self._watcher = asyncio.create_task(self._watch(checks, interval_s))

    @property
    def unavailable_dependencies(self) -> frozenset[str]:
        return self._down

    async def _watch(self, checks: dict[str, DependencyCheck], interval_s: float) -> None:
        # A check that raises or hangs (a stopped database never answers) is failing;
        # neither may kill or stall the watcher. A hung check is cancelled but not waited
        # for: psycopg spends up to 10 s cancelling a query on a server that does not
        # answer, and until it has unwound, its dependency stays down with no new probe.
        probes: dict[str, asyncio.Future[bool]] = {}
        try:
            while True:
                await self._watch_once(checks, probes, timeout_s=max(1.0, interval_s))
                await asyncio.sleep(interval_s)
        finally:
            for probe in probes.values():
                probe.cancel()

    async def _watch_once(
        self,
        checks: dict[str, DependencyCheck],
        probes: dict[str, asyncio.Future[bool]],
        timeout_s: float,
    ) -> None:
        for name, check in checks.items():
            previous = probes.get(name)
            if previous is None or previous.done():
                if previous is not None:
                    _passed(previous)  # a cancelled probe's late error is read, not lost
                probes[name] = asyncio.ensure_future(check())
        if probes:
            await asyncio.wait(probes.values(), timeout=timeout_s)
        down = frozenset(name for name, probe in probes.items() if not _passed(probe))
        if down != self._down:
            for name in sorted(down - self._down):
                _log.warning("dependency unavailable", extra={"fields": {"dependency": name}})
            for name in sorted(self._down - down):
                _log.info("dependency back", extra={"fields": {"dependency": name}})
            status = (
                health_pb2.HealthCheckResponse.NOT_SERVING
                if down
                else health_pb2.HealthCheckResponse.SERVING
            )
            for service in self._service_names:
                await self.health.set(service, status)
            self._down = down
        for probe in probes.values():
            if not probe.done():
                probe.cancel()

    async def _set_all(self, status: Any) -> None:
        await self.health.set("", status)
        for name in self._service_names:
            await self.health.set(name, status)

    async def stop(self, grace_s: float | None = None) -> None:
        """Health NOT_SERVING first, then refuse new calls and let in-flight ones finish."""
        if self._watcher is not None:
            self._watcher.cancel()
        await self.health.enter_graceful_shutdown()
        grace = self.settings.grace_period_s if grace_s is None else grace_s
        await self.server.stop(grace)
        _log.info("stopped", extra={"fields": {"grace_s": grace}})

    async def wait_for_termination(self) -> None:
        await self.server.wait_for_termination()


def _passed(probe: asyncio.Future[bool]) -> bool:
    """A finished probe that returned True (reading its error, so none goes unreported)."""
    if not probe.done() or probe.cancelled():
        return False
    return probe.exception() is None and probe.result() is True


async def serve(
    server: GrpcServer,
    *,
    on_start: Callable[[], Awaitable[None]] | None = None,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run until SIGTERM/SIGINT, then drain within the grace period.

    ``on_start`` runs after the port is bound (load models, open pools) and the server is
    marked SERVING only when it returns.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    try:
        if on_start is not None:
            await on_start()
        await server.set_serving(True)
        await stop.wait()
    finally:
        await server.stop()
        if on_stop is not None:
            await on_stop()
        server.telemetry.shutdown()
