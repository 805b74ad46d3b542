"""The load run: ``-c`` workers over ``--connections`` channels, stopped by ``-n`` or ``-z``,
paced by ``--rps``; every call is timed from send to its last response message."""

from __future__ import annotations

import asyncio
import math
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from services.load._methods import (
    LoadConfigError,
    MethodInfo,
    RequestFactory,
    parse_metadata,
    resolve_method,
)
from services.load._stats import OK, CallResult, Report, build_report, error_text, status_name

DEFAULT_TOTAL = 200
DEFAULT_CONCURRENCY = 50
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0


class TargetUnreachable(RuntimeError):
    """No connection to the target could be made within the connect timeout."""


@dataclass(frozen=True)
class LoadOptions:
    """ghz's main options. ``duration_s`` > 0 means run for that long and ignore ``total``."""

    call: str
    host: str
    data: Any = None
    metadata: dict[str, str] | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    total: int = DEFAULT_TOTAL
    duration_s: float = 0.0
    rps: float = 0.0
    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    connections: int = 1
    insecure: bool = False
    cacert: Path | None = None
    skip_first: int = 0
    count_errors: bool = False
    name: str = ""
    extra_channel_options: Sequence[tuple[str, Any]] = field(default_factory=tuple)

    def validate(self) -> None:
        if self.concurrency < 1:
            raise LoadConfigError("-c/--concurrency must be at least 1")
        if self.connections < 1 or self.connections > self.concurrency:
            raise LoadConfigError("--connections must be between 1 and the concurrency")
        if self.duration_s <= 0 and self.total < 1:
            raise LoadConfigError("-n/--total must be at least 1 (or give -z/--duration)")
        if self.duration_s <= 0 and self.total < self.concurrency:
            raise LoadConfigError("-n/--total cannot be smaller than -c/--concurrency (as ghz)")
        if self.rps < 0 or self.timeout_s < 0 or self.duration_s < 0:
            raise LoadConfigError("--rps, --timeout and --duration must not be negative")

    def ghz_options(self) -> dict[str, Any]:
        """The ``options`` block of ghz's JSON report."""
        return {
            "host": self.host,
            "call": self.call,
            "insecure": self.insecure,
            "total": 0 if self.duration_s > 0 else self.total,
            "concurrency": self.concurrency,
            "connections": self.connections,
            "rps": self.rps,
            "duration": round(self.duration_s * 1e9),
            "timeout": round(self.timeout_s * 1e9),
            "skipFirst": self.skip_first,
            "count-errors": self.count_errors,
            "data": self.data,
            "metadata": {
                k: ("<redacted>" if k == "authorization" else v)
                for k, v in (self.metadata or {}).items()
            },
        }


def options_dict(options: LoadOptions) -> dict[str, Any]:
    """Plain values of the options, for logs and tests."""
    return asdict(options)


class _Pacer:
    """Hands out send times ``1/rps`` apart; a late caller does not earn a burst (a ticker)."""

    def __init__(self, rps: float, loop: asyncio.AbstractEventLoop) -> None:
        self._interval = 1.0 / rps
        self._loop = loop
        self._next = loop.time()

    async def wait(self) -> None:
        now = self._loop.time()
        due = max(self._next, now)
        self._next = due + self._interval
        if due > now:
            await asyncio.sleep(due - now)


def _channel(options: LoadOptions, index: int) -> grpc.aio.Channel:
    # A local subchannel pool per channel gives each ``--connections`` its own HTTP/2
    # connection; the distinct argument keeps channels from being merged.
    channel_options: list[tuple[str, Any]] = [
        ("grpc.use_local_subchannel_pool", 1),
        ("tandem.load.connection", index),
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        *options.extra_channel_options,
    ]
    if options.insecure:
        return grpc.aio.insecure_channel(options.host, options=channel_options)
    root = options.cacert.read_bytes() if options.cacert is not None else None
    credentials = grpc.ssl_channel_credentials(root_certificates=root)
    return grpc.aio.secure_channel(options.host, credentials, options=channel_options)


async def run_load(options: LoadOptions, method: MethodInfo | None = None) -> Report:
    """Runs the load and returns ghz's report; raises ``TargetUnreachable`` if no connection."""
    options.validate()
    method = method or resolve_method(options.call)
    if method.client_streaming:
        raise LoadConfigError(
            f"{method.full_name} is client-streaming; the driver calls unary and "
            "server-streaming RPCs"
        )
    factory = RequestFactory(method, options.data)
    metadata = parse_metadata(options.metadata)
    channels = [_channel(options, i) for i in range(options.connections)]
    try:
        try:
            await asyncio.wait_for(
                asyncio.gather(*(c.channel_ready() for c in channels)),
                options.connect_timeout_s,
            )
        except TimeoutError:
            raise TargetUnreachable(
                f"could not connect to {options.host} within {options.connect_timeout_s:g}s"
            ) from None
        # No serializer: requests are pre-built bytes and responses stay bytes, so the
        # driver spends its CPU on sending, not on parsing answers it does not read.
        unary_callables: list[grpc.aio.UnaryUnaryMultiCallable[Any, Any]] = []
        stream_callables: list[grpc.aio.UnaryStreamMultiCallable[Any, Any]] = []
        if method.server_streaming:
            stream_callables = [c.unary_stream(method.path) for c in channels]
        else:
            unary_callables = [c.unary_unary(method.path) for c in channels]
        return await _drive(options, factory, metadata, unary_callables, stream_callables)
    finally:
        for channel in channels:
            await channel.close()


def _on_signals(
    loop: asyncio.AbstractEventLoop,
    signals: tuple[signal.Signals, ...],
    callback: Callable[[], None],
) -> list[signal.Signals]:
    """Install ``callback`` for ``signals`` where this loop may (the main thread's);
    returns those installed."""
    installed: list[signal.Signals] = []
    for sig in signals:
        try:
            loop.add_signal_handler(sig, callback)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append(sig)
    return installed


async def _drive(
    options: LoadOptions,
    factory: RequestFactory,
    metadata: tuple[tuple[str, str], ...],
    unary: list[grpc.aio.UnaryUnaryMultiCallable[Any, Any]],
    stream: list[grpc.aio.UnaryStreamMultiCallable[Any, Any]],
) -> Report:
    loop = asyncio.get_running_loop()
    pacer = _Pacer(options.rps, loop) if options.rps > 0 else None
    timeout = options.timeout_s if options.timeout_s > 0 else None
    results: list[CallResult] = []
    issued = 0
    start = time.perf_counter()
    deadline = start + options.duration_s if options.duration_s > 0 else math.inf
    end_reason = "normal"
    stopped = False

    def stop() -> None:
        # Like ghz on Ctrl-C: send nothing more, let calls in flight end, report.
        nonlocal stopped
        stopped = True

    def claim() -> int | None:
        nonlocal issued
        if stopped:
            return None
        if options.duration_s <= 0 and issued >= options.total:
            return None
        if time.perf_counter() >= deadline:
            return None
        issued += 1
        return issued - 1

    async def one_call(number: int, worker: int) -> None:
        request = factory.build(number, str(worker))
        slot = worker % max(len(unary), len(stream))
        sent = time.perf_counter()
        status, error = OK, ""
        try:
            if unary:
                await unary[slot](request, timeout=timeout, metadata=metadata)
            else:
                async for _ in stream[slot](request, timeout=timeout, metadata=metadata):
                    pass
        except grpc.aio.AioRpcError as exc:
            status, error = status_name(exc.code()), error_text(exc.code(), exc.details())
        done = time.perf_counter()
        results.append(CallResult(sent - start, done - sent, status, error))

    async def worker(index: int) -> None:
        while True:
            if pacer is not None:
                await pacer.wait()
            number = claim()
            if number is None:
                return
            await one_call(number, index)

    handled = _on_signals(loop, (signal.SIGINT, signal.SIGTERM), stop)
    try:
        workers = [asyncio.create_task(worker(i)) for i in range(options.concurrency)]
        await asyncio.gather(*workers)
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    total_s = time.perf_counter() - start
    if stopped:
        end_reason = "cancel"
    elif options.duration_s > 0:
        end_reason = "timeout"
    return build_report(
        results,
        total_s,
        count_errors=options.count_errors,
        skip_first=options.skip_first,
        name=options.name,
        end_reason=end_reason,
        options=options.ghz_options(),
    )
