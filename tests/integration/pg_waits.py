"""Counting how often a client waits for Postgres: what pipelining a transaction saves."""

from __future__ import annotations

import asyncio
import contextlib

from psycopg.conninfo import conninfo_to_dict

_BATCH_ENDS = (b"S", b"H")


class WaitCounter:
    """A TCP relay in front of the embedded Postgres that reads the client's protocol
    messages and counts the points where the client waits for the server: a simple
    Query, or a Sync or a Flush (the end of an extended-protocol batch; a Sync and a
    Flush back to back are one wait). ``statements`` counts what the server is asked to
    run: each simple Query and each Execute."""

    def __init__(self, pg_url: str) -> None:
        params = conninfo_to_dict(pg_url)
        self._socket = f"{params['host']}/.s.PGSQL.{params.get('port') or 5432}"
        self._dbname = params.get("dbname") or "postgres"
        self._server: asyncio.Server | None = None
        self.waits = 0
        self.statements = 0
        self._last = b""
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        # no SSL or GSS negotiation: the first message is the startup message
        return (
            f"postgresql://postgres@127.0.0.1:{port}/{self._dbname}"
            "?sslmode=disable&gssencmode=disable"
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    def _count(self, stream: bytearray, started: list[bool]) -> None:
        while True:
            if not started[0]:  # the startup message: a length, no type byte
                if len(stream) < 4:
                    return
                size = int.from_bytes(stream[:4], "big")
                if len(stream) < size:
                    return
                del stream[:size]
                started[0] = True
                continue
            if len(stream) < 5:
                return
            size = 1 + int.from_bytes(stream[1:5], "big")
            if len(stream) < size:
                return
            kind = bytes(stream[:1])
            if kind == b"Q" or (kind in _BATCH_ENDS and self._last not in _BATCH_ENDS):
                self.waits += 1
            if kind in (b"Q", b"E"):
                self.statements += 1
            self._last = kind
            del stream[:size]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(self._socket)
        self._writers += [writer, upstream_writer]
        stream, started = bytearray(), [False]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await source.read(65536):
                    if up:
                        stream.extend(data)
                        self._count(stream, started)
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(
            pipe(reader, upstream_writer, True), pipe(upstream_reader, writer, False)
        )
