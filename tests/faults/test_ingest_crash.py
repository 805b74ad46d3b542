"""Ingest crash safety on the whole stack as processes: the retrieval process is killed
(SIGKILL) in the middle of a large ingest through the gateway. No document may be
half-written (its stored chunk_count equals its chunk rows, ordinals 0..n-1, or it is
absent with no chunks), and running the same ingest again completes it with nothing lost
and nothing duplicated."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import grpc
import psycopg
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.processes import ProcessStack

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DOCUMENTS = 60
TENANT = "crash-ingest"
SECTION = (
    "The account team met the customer's operations lead to review the renewal. They "
    "walked through pricing tiers, the rollout plan across regions, open support tickets "
    "and the security questionnaire. Follow-ups were assigned with due dates. "
)


def _documents() -> list[rpb.DocumentInput]:
    return [
        rpb.DocumentInput(
            document_id=f"note-{i:03d}",
            title=f"Call notes {i}",
            content_type=rpb.CONTENT_TYPE_MARKDOWN,
            text="\n\n".join(
                f"## Meeting {j}\n\nAccount {i}, meeting {j}. {SECTION * 2}" for j in range(4)
            ),
        )
        for i in range(DOCUMENTS)
    ]


@pytest.fixture
def crash_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    stack = ProcessStack(
        tmp_path_factory.mktemp("crash-stack"),
        env={"GATEWAY_RATE_PER_S": "1000", "GATEWAY_BURST": "1000"},
        grace_s=2.0,
    )
    with stack:
        yield stack


def _stored(stack: ProcessStack) -> dict[str, tuple[int, int, int, int]]:
    """Per document: stored chunk_count, chunk rows, distinct ordinals, max ordinal."""
    with psycopg.connect(stack.database_url()) as conn:
        rows = conn.execute(
            """
            SELECT d.document_id, d.chunk_count, count(c.chunk_id),
                   count(DISTINCT c.ordinal), coalesce(max(c.ordinal), -1)
            FROM retrieval_documents d
            LEFT JOIN retrieval_chunks c
              ON c.tenant_id = d.tenant_id AND c.document_id = d.document_id
            WHERE d.tenant_id = %s
            GROUP BY d.document_id, d.chunk_count
            """,
            (TENANT,),
        ).fetchall()
        orphans = conn.execute(
            """
            SELECT count(*) FROM retrieval_chunks c
            WHERE c.tenant_id = %s AND NOT EXISTS (
                SELECT 1 FROM retrieval_documents d
                WHERE d.tenant_id = c.tenant_id AND d.document_id = c.document_id)
            """,
            (TENANT,),
        ).fetchone()
    assert orphans is not None and orphans[0] == 0, "chunks without their document"
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def _assert_whole(stored: dict[str, tuple[int, int, int, int]]) -> None:
    for document_id, (chunk_count, rows, distinct, top) in stored.items():
        assert chunk_count > 0, document_id
        assert rows == chunk_count == distinct, (document_id, chunk_count, rows, distinct)
        assert top == chunk_count - 1, (document_id, top, chunk_count)


async def _ingest(
    stub: gpb_grpc.GatewayServiceAsyncStub,
    key: str,
    *,
    kill_after: int | None = None,
    stack: Any = None,
) -> tuple[list[gpb.GatewayServiceIngestDocumentsResponse], grpc.aio.AioRpcError | None]:
    request = gpb.GatewayServiceIngestDocumentsRequest(documents=_documents())
    events: list[gpb.GatewayServiceIngestDocumentsResponse] = []
    finished = 0
    try:
        async for event in stub.IngestDocuments(
            request, metadata=(("authorization", f"Bearer {key}"),), timeout=300
        ):
            events.append(event)
            if event.HasField("document_finished"):
                finished += 1
                if kill_after is not None and finished == kill_after:
                    await asyncio.to_thread(stack.kill, "retrieval")
    except grpc.aio.AioRpcError as exc:
        return events, exc
    return events, None


async def test_a_retrieval_crash_mid_ingest_leaves_no_half_written_document(
    crash_stack: ProcessStack,
):
    stack = crash_stack
    key = await asyncio.to_thread(stack.create_key, TENANT)
    async with grpc.aio.insecure_channel(stack.gateway_address) as channel:
        stub: gpb_grpc.GatewayServiceAsyncStub = gpb_grpc.GatewayServiceStub(channel)
        events, error = await _ingest(stub, key, kill_after=DOCUMENTS // 4, stack=stack)
        assert error is not None, "the ingest should have been cut by the crash"
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert not any(e.HasField("summary") for e in events)

        after_crash = _stored(stack)
        _assert_whole(after_crash)
        assert 0 < len(after_crash) < DOCUMENTS, len(after_crash)

        await asyncio.to_thread(stack.start_service, "retrieval")
        # A client re-runs the ingest as soon as retrieval is back; the gateway's channel
        # may still be reconnecting, so UNAVAILABLE (with RetryInfo) is retried for up to
        # the 5 s recovery budget.
        restored = time.monotonic()
        while True:
            events, error = await _ingest(stub, key)
            if error is None or error.code() != grpc.StatusCode.UNAVAILABLE:
                break
            assert time.monotonic() - restored < 5.0, error
            await asyncio.sleep(0.2)
        assert error is None, error
        summary = events[-1].summary
        assert summary.documents_total == DOCUMENTS
        assert summary.documents_failed == 0
        # What the crashed run wrote is recognised as unchanged, not written twice.
        assert summary.documents_unchanged >= len(after_crash)
        assert summary.documents_unchanged + summary.documents_included == DOCUMENTS

    final = _stored(stack)
    assert len(final) == DOCUMENTS
    _assert_whole(final)
    for document_id, stored in after_crash.items():
        assert final[document_id] == stored, document_id
