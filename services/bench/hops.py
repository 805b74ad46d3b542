"""``tandem bench hops``: what the service topology costs before any service does work.

A request to the gateway crosses Python gRPC processes: Search goes gateway → retrieval →
embedding, AskSql gateway → sql. This starts such a chain of bare processes, each a
``grpc.aio`` server on the services' event loop whose one method forwards the request's
bytes to the next process over a channel made like the services' (``channel_options``),
the last answering with a reply the size of a search result. It drives the first at a
fixed concurrency and reads every process's CPU from ``/proc`` over the window.

The per-process figures are a floor: the CPU a hop costs with no validation, no
interceptor, no log line, no database. Set beside ``tandem bench cost`` they say how
much of a gateway RPC's CPU is the topology itself, and so what a target below it would
need (fewer hops, or hops that are not Python processes).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from services.bench._proc import LinuxProc, clock_ticks_per_s
from services.bench._publish import publish
from services.common import channel_options, run_service

_METHOD = "/tandem.bench.Hop/Forward"
# Search's reply through the gateway is about this size (ten hits with their text).
DEFAULT_REPLY_BYTES = 12_000
_REQUEST = b"q" * 200


@dataclass(frozen=True)
class HopsSettings:
    out: Path
    hops: int = 3
    concurrency: int = 16
    duration_s: float = 10.0
    reply_bytes: int = DEFAULT_REPLY_BYTES
    # Requests per second to pace the load at (0: as fast as the chain answers). A hop's
    # CPU per request depends on the rate (fewer requests share each wake-up), so compare
    # with a stack at the rate it reached.
    rate: float = 0.0


def _serve(next_port: int, reply_bytes: int) -> None:
    """One hop: forward to ``next_port``, or answer ``reply_bytes`` when it is 0. Prints
    its port once it listens."""

    async def main() -> None:
        reply = b"r" * reply_bytes
        channel = (
            grpc.aio.insecure_channel(f"127.0.0.1:{next_port}", options=channel_options())
            if next_port
            else None
        )
        forward: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] | None = (
            channel.unary_unary(_METHOD) if channel is not None else None
        )

        async def handle(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return await forward(request) if forward is not None else reply

        server = grpc.aio.server(options=channel_options())
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "tandem.bench.Hop", {"Forward": grpc.unary_unary_rpc_method_handler(handle)}
                ),
            )
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(port, flush=True)
        await server.wait_for_termination()

    run_service(main)


def _start_chain(hops: int, reply_bytes: int) -> tuple[list[subprocess.Popen[str]], int]:
    """The chain's processes, first to last, and the first one's port (they are started
    last first: each needs its successor's port)."""
    processes: list[subprocess.Popen[str]] = []
    next_port = 0
    try:
        for _ in range(hops):
            process = subprocess.Popen(
                [sys.executable, "-m", "services.bench.hops", str(next_port), str(reply_bytes)],
                stdout=subprocess.PIPE,
                text=True,
            )
            processes.append(process)
            line = process.stdout.readline() if process.stdout else ""
            if not line.strip().isdigit():
                raise RuntimeError("a hop process did not start")
            next_port = int(line)
    except BaseException:
        _stop(processes)
        raise
    processes.reverse()
    return processes, next_port


def _stop(processes: Sequence[subprocess.Popen[str]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _ticks(pids: Sequence[int]) -> list[int]:
    proc = LinuxProc()
    return [stat.ticks if (stat := proc.stat(pid)) is not None else 0 for pid in pids]


async def _drive(
    port: int, concurrency: int, duration_s: float, rate: float, pids: Sequence[int]
) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=channel_options()) as ch:
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = ch.unary_unary(_METHOD)
        for _ in range(200):  # connections made, code paths warm
            await call(_REQUEST)
        done = 0
        stop = 0.0

        async def worker(first: float) -> None:
            nonlocal done
            interval = concurrency / rate if rate > 0 else 0.0
            due = first
            while (now := time.perf_counter()) < stop:
                if interval:  # each worker its own slots, the workers' slots interleaved
                    if due > now:
                        await asyncio.sleep(due - now)
                    due += interval
                await call(_REQUEST)
                done += 1

        before = _ticks(pids)
        started = time.perf_counter()
        stop = started + duration_s
        step = 1 / rate if rate > 0 else 0.0
        await asyncio.gather(*(worker(started + i * step) for i in range(concurrency)))
        elapsed = time.perf_counter() - started
        after = _ticks(pids)
    per_s = clock_ticks_per_s()
    cpu_ms = [1000 * (a - b) / per_s / max(done, 1) for a, b in zip(after, before, strict=True)]
    return {
        "requests": done,
        "rps": round(done / elapsed, 1),
        "cpu_ms_per_request_by_hop": [round(v, 3) for v in cpu_ms],
        "cpu_ms_per_request": round(sum(cpu_ms), 3),
    }


def run(settings: HopsSettings) -> dict[str, Any]:
    if settings.hops < 1:
        raise ValueError("hops must be at least 1")
    processes, entry = _start_chain(settings.hops, settings.reply_bytes)
    try:
        measured = asyncio.run(
            _drive(
                entry,
                settings.concurrency,
                settings.duration_s,
                settings.rate,
                [p.pid for p in processes],
            )
        )
    finally:
        _stop(processes)
    return {
        "hops": settings.hops,
        "concurrency": settings.concurrency,
        "duration_s": settings.duration_s,
        "reply_bytes": settings.reply_bytes,
        "rate": settings.rate,
        **measured,
    }


def render(result: dict[str, Any]) -> str:
    hops = result["cpu_ms_per_request_by_hop"]
    names = [f"hop {i + 1}" + (" (last)" if i == len(hops) - 1 else "") for i in range(len(hops))]
    lines = [
        f"bare gRPC chain: {result['hops']} Python processes, c={result['concurrency']}, "
        f"{result['reply_bytes']}-byte reply: {result['rps']} req/s"
        + (f" (paced at {result['rate']:g}/s)" if result["rate"] else ""),
        *(f"  {name:<12} {cpu:6.3f} CPU ms/request" for name, cpu in zip(names, hops, strict=True)),
        f"  {'all':<12} {result['cpu_ms_per_request']:6.3f} CPU ms/request "
        "(the driver's own CPU excluded)",
    ]
    return "\n".join(lines)


def main(settings: HopsSettings) -> dict[str, Any]:
    result = run(settings)
    publish(result, render(result), settings.out)
    return result


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
