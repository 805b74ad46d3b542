"""UploadDocument: a file too big for one message arrives in pieces and leaves as one.

The header comes first (the document's fields and the ingest options), then the file's
bytes in pieces of at most ``PIECE_BYTES``; the gateway counts them against the upload
limit as they arrive (a client cannot make it hold more than the limit) and hands the
whole file to the retrieval service as an ingest of one document with ``content``, over
the internal channel, whose message limit is sized for it (``internal_message_bytes``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from services.common import InvalidArgument
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb

PIECE_BYTES = 4 * 1024 * 1024
MALFORMED = "UPLOAD_MALFORMED"
TOO_LARGE = "UPLOAD_TOO_LARGE"
# Room around the file in the internal request (the document's other fields).
_ENVELOPE_BYTES = 1024 * 1024


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


async def read_upload(
    requests: AsyncIterator[gpb.GatewayServiceUploadDocumentRequest], max_bytes: int
) -> tuple[gpb.GatewayServiceUploadHeader, bytes]:
    """The header and the file, or INVALID_ARGUMENT naming what is wrong."""
    header: gpb.GatewayServiceUploadHeader | None = None
    pieces: list[bytes] = []
    size = 0
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
        if len(message.chunk) > PIECE_BYTES:
            raise _malformed("chunk", f"at most {PIECE_BYTES} bytes a piece")
        size += len(message.chunk)
        if size > max_bytes:
            raise InvalidArgument.field(
                "chunk",
                f"the file passes the upload limit of {max_bytes} bytes",
                reason=TOO_LARGE,
                metadata={"limit": str(max_bytes)},
            )
        pieces.append(message.chunk)
    if header is None:
        raise _malformed("header", "the first message must be the header")
    if size == 0:
        raise _malformed("chunk", "no bytes came: send the file after the header")
    return header, b"".join(pieces)


def to_ingest(
    header: gpb.GatewayServiceUploadHeader, content: bytes, tenant: str
) -> rpb.IngestDocumentsRequest:
    """The retrieval request for the uploaded file (the tenant from the key)."""
    document = rpb.DocumentInput()
    document.CopyFrom(header.document)
    document.content = content
    request = rpb.IngestDocumentsRequest(
        tenant_id=tenant, documents=[document], dry_run=header.dry_run
    )
    if header.HasField("redaction_policy"):
        request.redaction_policy.CopyFrom(header.redaction_policy)
    return request
