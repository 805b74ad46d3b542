"""Uploads (gateway._upload): the spool keeps small files in memory and larger ones on
disk, the internal message built around it is the IngestDocumentsRequest protobuf would
make, the in-flight budgets refuse with RetryInfo and give everything back, and sending
goes in turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from google.protobuf import struct_pb2

from gateway import UploadSettings
from gateway._settings import MIB
from gateway._upload import (
    BUDGET_EXHAUSTED,
    InFlightBytes,
    Sending,
    Spool,
    ingest_message,
    read_upload,
)
from services.common import ResourceExhausted, SettingsError, status_for
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb


def _header(**fields: object) -> gpb.GatewayServiceUploadHeader:
    metadata = struct_pb2.Struct()
    metadata.update({"team": "sales", "year": 2024})
    document = rpb.DocumentInput(
        document_id="report.pdf", title="Annual report", file_name="report.pdf",
        category="finance", metadata=metadata,
    )  # fmt: skip
    return gpb.GatewayServiceUploadHeader(document=document, **fields)  # type: ignore[arg-type]


def _expected(header: gpb.GatewayServiceUploadHeader, data: bytes) -> rpb.IngestDocumentsRequest:
    document = rpb.DocumentInput()
    document.CopyFrom(header.document)
    document.content = data
    request = rpb.IngestDocumentsRequest(
        tenant_id="acme", documents=[document], dry_run=header.dry_run
    )
    if header.HasField("redaction_policy"):
        request.redaction_policy.CopyFrom(header.redaction_policy)
    return request


async def _spooled(data: bytes, memory_bytes: int, piece: int = 1000) -> Spool:
    spool = Spool(memory_bytes)
    for i in range(0, len(data), piece):
        await spool.write(data[i : i + piece])
    return spool


@pytest.mark.parametrize(
    ("size", "memory_bytes", "on_disk"),
    [(10, 1024, False), (5000, 1024, True), (200_000, 0, True), (1, 0, True)],
)
async def test_the_message_around_the_spool_is_the_protobuf_request(size, memory_bytes, on_disk):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    header = _header(
        dry_run=True,
        redaction_policy=rpb.RedactionPolicy(keep_kinds=[rpb.REDACTION_KIND_API_KEY]),
    )
    spool = await _spooled(data, memory_bytes)
    try:
        assert spool.on_disk is on_disk and spool.size == size
        message = ingest_message(header, spool, "acme")
    finally:
        spool.close()
    assert rpb.IngestDocumentsRequest.FromString(message) == _expected(header, data)


async def test_a_bare_header_makes_a_bare_request():
    header = gpb.GatewayServiceUploadHeader(document=rpb.DocumentInput(document_id="a"))
    spool = await _spooled(b"hello", 1 * MIB)
    assert rpb.IngestDocumentsRequest.FromString(
        ingest_message(header, spool, "t")
    ) == rpb.IngestDocumentsRequest(
        tenant_id="t", documents=[rpb.DocumentInput(document_id="a", content=b"hello")]
    )


async def test_the_headers_acl_reaches_the_internal_request():
    acl = rpb.DocumentAcl(principals=["alice"], groups=["hr", "sales"])
    header = gpb.GatewayServiceUploadHeader(document=rpb.DocumentInput(document_id="a", acl=acl))
    spool = await _spooled(b"salary bands", 1 * MIB)
    request = rpb.IngestDocumentsRequest.FromString(ingest_message(header, spool, "t"))
    assert request.documents[0].acl == acl and request.documents[0].content == b"salary bands"


def test_the_wire_tags_are_the_descriptors():
    documents = rpb.IngestDocumentsRequest.DESCRIPTOR.fields_by_name["documents"]
    content = rpb.DocumentInput.DESCRIPTOR.fields_by_name["content"]
    assert (documents.number, content.number) == (2, 8)


async def _requests(
    messages: list[gpb.GatewayServiceUploadDocumentRequest],
) -> AsyncIterator[gpb.GatewayServiceUploadDocumentRequest]:
    for message in messages:
        yield message


async def test_pieces_are_counted_before_they_are_kept():
    counted: list[int] = []
    messages = [
        gpb.GatewayServiceUploadDocumentRequest(header=_header()),
        *(gpb.GatewayServiceUploadDocumentRequest(chunk=b"x" * 100) for _ in range(3)),
    ]
    spool = Spool(1 * MIB)
    header = await read_upload(_requests(messages), 1000, spool, counted.append)
    assert header == _header() and counted == [100, 100, 100] and spool.size == 300

    def refuse(size: int) -> None:
        raise InFlightBytes(UploadSettings(tenant_bytes=1, total_bytes=1))._refusal("tenant", 1)

    kept = Spool(1 * MIB)
    with pytest.raises(ResourceExhausted):
        await read_upload(_requests(messages), 1000, kept, refuse)
    assert kept.size == 0


def test_in_flight_bytes_are_bounded_per_tenant_and_in_total_with_retry_info():
    budget = InFlightBytes(UploadSettings(tenant_bytes=100, total_bytes=150, retry_s=2.5))
    with budget.account("a") as a:
        a(60)
        a(40)
        with pytest.raises(ResourceExhausted) as tenant:
            a(1)
        assert tenant.value.metadata == {"scope": "tenant", "limit": "100"}
        with budget.account("b") as b:
            b(50)
            with pytest.raises(ResourceExhausted) as total:
                b(1)
            assert total.value.metadata == {"scope": "gateway", "limit": "150"}
            assert total.value.reason == BUDGET_EXHAUSTED
            status = status_for(total.value)
            assert status.code == 8 and "retry" in status.message
            assert total.value.retry_after_s == 2.5
        assert budget.total == 100 and budget.held("b") == 0
    # Everything counted is given back, refused pieces were never counted.
    assert budget.total == 0 and budget.held("a") == 0


def test_each_budget_holds_at_least_one_largest_file():
    from gateway import GatewaySettings

    with pytest.raises(SettingsError, match="GATEWAY_UPLOAD_TENANT_BYTES"):
        GatewaySettings.from_env({"GATEWAY_UPLOAD_TENANT_BYTES": str(10 * MIB)})
    with pytest.raises(SettingsError):
        GatewaySettings.from_env({"GATEWAY_UPLOAD_TOTAL_BYTES": str(60 * MIB)})
    settings = GatewaySettings.from_env(
        {
            "GATEWAY_UPLOAD_MEMORY_BYTES": "0",
            "GATEWAY_UPLOAD_SPOOL_DIR": "/var/tmp",
            "GATEWAY_UPLOAD_TENANT_BYTES": str(100 * MIB),
            "GATEWAY_UPLOAD_TOTAL_BYTES": str(300 * MIB),
            "GATEWAY_UPLOAD_SENDING_BYTES": str(80 * MIB),
            "GATEWAY_UPLOAD_RETRY_S": "1.5",
        }
    )
    assert settings.uploads == UploadSettings(0, "/var/tmp", 100 * MIB, 300 * MIB, 80 * MIB, 1.5)
    assert GatewaySettings.from_env({}).uploads == UploadSettings()


async def test_sending_goes_in_turns_and_a_large_file_alone():
    sending = Sending(100)
    order: list[str] = []
    release = asyncio.Event()

    async def send(name: str, size: int) -> None:
        async with sending.turn(size):
            order.append(f"{name}+")
            await release.wait()
            order.append(f"{name}-")

    first = asyncio.ensure_future(send("a", 60))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(send("b", 60))
    third = asyncio.ensure_future(send("c", 30))
    await asyncio.sleep(0.01)
    # b waits (60 + 60 > 100); c fits beside a.
    assert order == ["a+", "c+"]
    release.set()
    await asyncio.gather(first, second, third)
    assert order.index("b+") > order.index("a-")
    big = asyncio.ensure_future(send("big", 500))  # larger than the whole: goes alone
    await asyncio.wait_for(big, 1)
