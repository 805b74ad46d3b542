"""UploadDocument: a file too big for one message arrives in pieces and leaves as one.

The header comes first (the document's fields and the ingest options), then the file's
bytes in pieces of at most ``PIECE_BYTES``; the gateway counts them against the upload
limit as they arrive (a client cannot make it hold more than the limit) and hands the
whole file to the retrieval service as an ingest of one document with ``content``, over
the internal channel, whose message limit is sized for it (``internal_message_bytes``).

Memory: held whole, eight concurrent 49 MiB uploads took the gateway to 1.5 GiB (the
pieces, their join, the request's copy, its serialisation). Now a file is kept in memory
only up to a small size and spooled to disk past it (``Spool``); what is in flight is
bounded per tenant and in total (``InFlightBytes``: RESOURCE_EXHAUSTED with RetryInfo
past a budget, counted as the bytes arrive); and the one internal message is written
around the spooled file and read back in one piece only while it is being sent
(``Sending`` bounds how many bytes are sent at once), so a file costs about twice its
size in memory for the moment it is handed on, and next to nothing while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import IO, Any

import grpc

from gateway._settings import UploadSettings
from services.common import InvalidArgument, ResourceExhausted
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb

PIECE_BYTES = 4 * 1024 * 1024
MALFORMED = "UPLOAD_MALFORMED"
TOO_LARGE = "UPLOAD_TOO_LARGE"
BUDGET_EXHAUSTED = "UPLOAD_BUDGET_EXHAUSTED"
# Room around the file in the internal request (the document's other fields).
_ENVELOPE_BYTES = 1024 * 1024
INGEST_METHOD = "/tandem.v1.RetrievalService/IngestDocuments"


async def drain(requests: AsyncIterator[object], max_messages: int) -> None:
    """Read what the client is still sending before the call is refused.

    A client-streaming call ended by the server while the client is still writing makes
    gRPC's client report "Internal error from Core" instead of the status the server
    sent (a race in the client); reading the rest first delivers the real refusal. At
    most ``max_messages`` are read: a client that keeps sending past that gets the race.
    """
    count = 0
    async for _ in requests:
        count += 1
        if count >= max_messages:
            return


def drain_budget(max_upload_bytes: int) -> int:
    """Messages a well-behaved upload of the largest file sends, and some."""
    return max_upload_bytes // PIECE_BYTES + 4


def internal_message_bytes(max_upload_bytes: int, default: int) -> int:
    """The gateway-to-retrieval message limit that carries the largest upload."""
    return max(default, max_upload_bytes + _ENVELOPE_BYTES)


def _malformed(field: str, description: str) -> InvalidArgument:
    return InvalidArgument.field(field, description, reason=MALFORMED)


class InFlightBytes:
    """Upload bytes received and not yet answered, per tenant and in total.

    Counted as the pieces arrive, so a refusal comes as soon as a budget would be
    passed, before the file is held; released when the call ends, however it ends. The
    per-tenant budget keeps one tenant's uploads from taking the whole of the total.
    """

    def __init__(self, settings: UploadSettings) -> None:
        self._settings = settings
        self._tenants: dict[str, int] = {}
        self.total = 0

    def held(self, tenant: str) -> int:
        return self._tenants.get(tenant, 0)

    def take(self, tenant: str, size: int) -> None:
        """Count ``size`` more bytes for ``tenant``, or RESOURCE_EXHAUSTED naming the
        budget it would pass (nothing counted then)."""
        settings = self._settings
        held = self.held(tenant)
        if held + size > settings.tenant_bytes:
            raise self._refusal("tenant", settings.tenant_bytes)
        if self.total + size > settings.total_bytes:
            raise self._refusal("gateway", settings.total_bytes)
        self._tenants[tenant] = held + size
        self.total += size

    def give_back(self, tenant: str, size: int) -> None:
        left = self.held(tenant) - size
        if left > 0:
            self._tenants[tenant] = left
        else:
            self._tenants.pop(tenant, None)
        self.total -= size

    @contextmanager
    def account(self, tenant: str) -> Iterator[Callable[[int], None]]:
        """A counter for one upload: call it with each piece's size; everything it
        counted is given back on leaving."""
        counted = 0

        def count(size: int) -> None:
            nonlocal counted
            self.take(tenant, size)
            counted += size

        try:
            yield count
        finally:
            self.give_back(tenant, counted)

    def _refusal(self, scope: str, limit: int) -> ResourceExhausted:
        whose = "this tenant's" if scope == "tenant" else "the gateway's"
        return ResourceExhausted(
            f"{whose} uploads in flight would pass {limit} bytes; retry when some finish",
            retry_after_s=self._settings.retry_s,
            reason=BUDGET_EXHAUSTED,
            metadata={"scope": scope, "limit": str(limit)},
        )


class Sending:
    """At most ``capacity`` bytes of files being handed to retrieval at once (a file
    larger than that goes alone), first come first served."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._used = 0
        self._turns: asyncio.Condition | None = None

    @asynccontextmanager
    async def turn(self, size: int) -> AsyncIterator[None]:
        if self._turns is None:
            self._turns = asyncio.Condition()
        turns = self._turns
        async with turns:
            await turns.wait_for(lambda: self._used == 0 or self._used + size <= self._capacity)
            self._used += size
        try:
            yield
        finally:
            async with turns:
                self._used -= size
                turns.notify_all()


# The gateway's server options for uploads. gRPC's flow-control windows grow with the
# bandwidth-delay product it probes for, and every stream's window is data gRPC buffers
# before Python reads it: sixteen 49 MiB uploads at once held a few hundred MiB that way
# (a 540 MiB gateway; 350 MiB without the probe). Without it a stream's window is the
# 64 KiB lookahead, opened to the size of the message being read; calls to the gateway
# are small but for uploads and ingest batches, and come over the edge's local network.
UPLOAD_OPTIONS: tuple[tuple[str, Any], ...] = (("grpc.http2.bdp_probe", 0),)

# Refused uploads drained at once, and for how long at most. A refused client goes on
# sending its file as fast as it can; every stream being read costs a piece or two in
# memory (gRPC's buffer, the bytes, the parsed message), so sixteen refused 49 MiB uploads
# drained side by side took the gateway past 512 MiB. A stream not read costs only its
# flow-control window. Past the time, the refusal is sent undrained (the client may then
# read it as "Internal error from Core": see ``drain``).
DRAINING = 2
DRAIN_S = 10.0


class Uploads:
    """The gateway's upload state: the in-flight budgets, the sending turns and the
    draining of refused uploads."""

    def __init__(self, settings: UploadSettings) -> None:
        self.settings = settings
        self.in_flight = InFlightBytes(settings)
        self.sending = Sending(settings.sending_bytes)
        self._draining: asyncio.Semaphore | None = None

    async def drain(self, requests: AsyncIterator[object], max_messages: int) -> None:
        """``drain`` in turns (``DRAINING`` at once), for at most ``DRAIN_S``."""
        if self._draining is None:
            self._draining = asyncio.Semaphore(DRAINING)
        async with self._draining:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DRAIN_S):
                    await drain(requests, max_messages)


# Bytes kept free in front of a spooled file for the start of the message around it.
_ROOM = 32


class Spool:
    """An uploaded file as it arrives: in memory up to ``memory_bytes``, then in an
    unlinked temporary file (written off the event loop).

    ``_ROOM`` bytes are kept free in front of the file, so that the one internal message
    (a few bytes of prefix, the file, the document's other fields) can be written around
    it in place and read back with a single copy of the file.
    """

    def __init__(self, memory_bytes: int, directory: str | None = None) -> None:
        self._memory_bytes = memory_bytes
        self._directory = directory
        self._buffer = bytearray(_ROOM)
        self._file: IO[bytes] | None = None
        self.size = 0

    @property
    def on_disk(self) -> bool:
        return self._file is not None

    async def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._file is None and self.size <= self._memory_bytes:
            self._buffer += data
            return
        if self._file is None:
            self._file = await asyncio.to_thread(self._spill)
        await asyncio.to_thread(self._file.write, data)

    def _spill(self) -> IO[bytes]:
        spooled = tempfile.TemporaryFile(dir=self._directory)  # noqa: SIM115 (kept open)
        spooled.write(self._buffer)
        self._buffer = bytearray()
        return spooled

    def around(self, prefix: bytes, suffix: bytes) -> bytes:
        """``prefix + file + suffix``, copying the file once (blocking: file reads)."""
        if len(prefix) > _ROOM:
            raise ValueError("the prefix does not fit the room kept for it")
        start = _ROOM - len(prefix)
        if self._file is None:
            self._buffer[start:_ROOM] = prefix
            self._buffer += suffix
            return bytes(memoryview(self._buffer)[start:])
        self._file.seek(start)
        self._file.write(prefix)
        self._file.seek(0, os.SEEK_END)
        self._file.write(suffix)
        self._file.flush()
        length = len(prefix) + self.size + len(suffix)
        data = os.pread(self._file.fileno(), length, start)
        if len(data) != length:  # a short read: not expected of a regular file
            raise OSError(f"read {len(data)} of {length} spooled bytes")
        return data

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._buffer = bytearray()


async def read_upload(
    requests: AsyncIterator[gpb.GatewayServiceUploadDocumentRequest],
    max_bytes: int,
    spool: Spool,
    count: Callable[[int], None] = lambda size: None,
) -> gpb.GatewayServiceUploadHeader:
    """The header, with the file written to ``spool`` (each piece first passed to
    ``count``, which may refuse it), or INVALID_ARGUMENT naming what is wrong."""
    header: gpb.GatewayServiceUploadHeader | None = None
    async for message in requests:
        part = message.WhichOneof("part")
        if part == "header":
            if header is not None:
                raise _malformed("header", "comes once, as the first message")
            header = message.header
            if header.document.text:
                raise _malformed("header.document.text", "must be empty: the file follows")
            if header.document.content:
                raise _malformed(
                    "header.document.content", "must be empty: the file follows in chunks"
                )
            continue
        if header is None:
            raise _malformed("header", "the first message must be the header")
        if part != "chunk":
            raise _malformed("part", "each message is a header or a chunk")
        piece = message.chunk
        del message  # the parsed copy of the piece is not kept while it is written
        if len(piece) > PIECE_BYTES:
            raise _malformed("chunk", f"at most {PIECE_BYTES} bytes a piece")
        if spool.size + len(piece) > max_bytes:
            raise InvalidArgument.field(
                "chunk",
                f"the file passes the upload limit of {max_bytes} bytes",
                reason=TOO_LARGE,
                metadata={"limit": str(max_bytes)},
            )
        count(len(piece))
        await spool.write(piece)
    if header is None:
        raise _malformed("header", "the first message must be the header")
    if spool.size == 0:
        raise _malformed("chunk", "no bytes came: send the file after the header")
    return header


# glibc's allocator raises its mmap threshold to the size of each large block freed, so
# after the first upload every piece (up to 4 MiB, several copies each) comes from its
# heaps, which it seldom gives back: the gateway stayed hundreds of MiB larger after a
# burst of uploads. A fixed threshold keeps large blocks in mmap, returned when freed.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 256 * 1024


def return_large_blocks() -> bool:
    """Fix glibc's mmap threshold for this process (``MMAP_THRESHOLD_BYTES``); False
    where the C library is not glibc. For the gateway's process start, not a library."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# Wire tags (field number << 3 | 2, length-delimited): IngestDocumentsRequest.documents
# and DocumentInput.content (retrieval_service.proto). Checked against the descriptors
# by tests/unit/gateway/test_upload.py.
_DOCUMENTS_TAG = bytes([2 << 3 | 2])
_CONTENT_TAG = bytes([8 << 3 | 2])


def ingest_message(header: gpb.GatewayServiceUploadHeader, spool: Spool, tenant: str) -> bytes:
    """The serialised IngestDocumentsRequest for the spooled file (the tenant from the
    key), built around the file without a protobuf copy of it: the document is its
    ``content`` field followed by the header's other fields, then the request's own
    fields (protobuf parsers accept fields in any order). Blocking: it reads the spool.
    """
    if header.document.content or header.document.text:
        raise ValueError("the header's document must carry neither text nor content")
    others = header.document.SerializeToString()
    content_head = _CONTENT_TAG + _varint(spool.size)
    document_size = len(content_head) + spool.size + len(others)
    request = rpb.IngestDocumentsRequest(tenant_id=tenant, dry_run=header.dry_run)
    if header.HasField("redaction_policy"):
        request.redaction_policy.CopyFrom(header.redaction_policy)
    prefix = _DOCUMENTS_TAG + _varint(document_size) + content_head
    return spool.around(prefix, others + request.SerializeToString())


class _Once:
    """The message for one send: handed to gRPC's serialiser and then let go of (the
    call object keeps its request until the call ends; this keeps nothing)."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def take(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise RuntimeError("an upload's message is sent once")
        return data


def _serialise(message: _Once) -> bytes:
    return message.take()


def ingest_call(channel: grpc.aio.Channel, message: bytes, timeout_s: float | None = None) -> Any:
    """RetrievalService.IngestDocuments with an already serialised request."""
    call = channel.unary_stream(
        INGEST_METHOD,
        request_serializer=_serialise,
        response_deserializer=rpb.IngestDocumentsResponse.FromString,
    )
    return call(_Once(message), timeout=timeout_s)
