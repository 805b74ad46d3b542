"""Limits on the running system: a request over the message-size limit, oversized fields
named in INVALID_ARGUMENT, and a query producing millions of rows, or one huge value,
answered with at most the cap, ``truncated`` and bounded memory in the SQL process."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.faults.contract import assert_contract, outcome
from tests.faults.inprocess import Stack, pg_url, stack
from tests.faults.procs import ServiceProcess, health, start_service

__all__ = ["pg_url", "stack"]

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


async def _healthy(stack: Stack) -> None:
    assert await health(stack.addresses["gateway"]) == "SERVING"
    reply = await stack.stub.ValidateSql(
        gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1"), metadata=stack.metadata, timeout=10
    )
    assert reply.valid


async def test_a_request_over_the_message_size_limit_is_resource_exhausted(stack: Stack):
    limit = stack.gateway.server.settings.max_message_bytes
    huge = gpb.GatewayServiceSearchRequest(query="x" * (limit + MIB))
    for _ in range(3):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stack.stub.Search(huge, metadata=stack.metadata, timeout=20)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # gRPC refuses it before any handler runs, so the message is the transport's own:
        # it names the sizes, nothing internal.
        assert "127.0.0.1" not in (err.value.details() or "")
    await _healthy(stack)


# Every size-limited field of every RPC, one past its limit, and the path it must name.
OVERSIZED: list[tuple[str, Any, str]] = [
    ("Ask", gpb.GatewayServiceAskRequest(question="q" * 4001), "question"),
    ("Ask", gpb.GatewayServiceAskRequest(
        question="q", options=qpb.AskOptions(database="d" * 257)), "options.database"),
    ("Ask", gpb.GatewayServiceAskRequest(question="q", options=qpb.AskOptions(
        search_filter=rpb.SearchFilter(categories=["c"] * 101))),
     "options.search_filter.categories"),
    ("Ask", gpb.GatewayServiceAskRequest(question="q", options=qpb.AskOptions(
        search_filter=rpb.SearchFilter(document_ids=["d" * 257]))),
     "options.search_filter.document_ids[0]"),
    ("StreamAsk", gpb.GatewayServiceStreamAskRequest(question="q" * 4001), "question"),
    ("StreamAsk", gpb.GatewayServiceStreamAskRequest(
        question="q", options=qpb.AskOptions(top_k=10_000)), "options.top_k"),
    ("Search", gpb.GatewayServiceSearchRequest(query="q" * 2001), "query"),
    ("Search", gpb.GatewayServiceSearchRequest(query="q", top_k=2**31 - 1), "top_k"),
    ("Search", gpb.GatewayServiceSearchRequest(
        query="q", filter=rpb.SearchFilter(document_ids=["d"] * 1001)), "filter.document_ids"),
    ("Search", gpb.GatewayServiceSearchRequest(query="q", candidate_depth=1001),
     "candidate_depth"),
    ("AskSql", gpb.GatewayServiceAskSqlRequest(question="q" * 2001), "question"),
    ("AskSql", gpb.GatewayServiceAskSqlRequest(question="q", database="d" * 257), "database"),
    ("AskSql", gpb.GatewayServiceAskSqlRequest(question="q", max_rows=1001), "max_rows"),
    ("RunSqlIntent", gpb.GatewayServiceRunSqlIntentRequest(intent=spb.SqlIntent(
        kind=spb.INTENT_KIND_LIST, table="t" * 257)), "intent.table"),
    ("RunSqlIntent", gpb.GatewayServiceRunSqlIntentRequest(intent=spb.SqlIntent(
        kind=spb.INTENT_KIND_LIST, table="companies", columns=["c"] * 101)), "intent.columns"),
    ("ValidateSql", gpb.GatewayServiceValidateSqlRequest(sql="s" * 20_001), "sql"),
    ("IngestDocuments", gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id=f"d{i}", text="t") for i in range(257)]),
     "documents"),
    ("DeleteDocument", gpb.GatewayServiceDeleteDocumentRequest(document_id="d" * 257),
     "document_id"),
    ("DescribeSchema", gpb.GatewayServiceDescribeSchemaRequest(tables=["t"] * 201), "tables"),
    ("DescribeSchema", gpb.GatewayServiceDescribeSchemaRequest(question="q" * 2001),
     "question"),
]  # fmt: skip


async def test_oversized_fields_are_invalid_argument_naming_the_field(stack: Stack):
    for rpc, request, field in OVERSIZED:
        seen = await outcome(getattr(stack.stub, rpc)(request, metadata=stack.metadata, timeout=20))
        assert seen is not None, f"{rpc} accepted an oversized {field}"
        assert seen.code == grpc.StatusCode.INVALID_ARGUMENT, (rpc, field, seen)
        assert field in seen.fields, (rpc, field, seen.fields)
        assert_contract(seen)
    await _healthy(stack)


async def test_an_oversized_document_fails_alone_naming_its_field(stack: Stack):
    documents = [
        rpb.DocumentInput(document_id="fine", text="A short note about renewals."),
        rpb.DocumentInput(document_id="huge", text="word " * 2_000_000),
        rpb.DocumentInput(document_id="d" * 300, text="bad id"),
    ]
    events = [
        e
        async for e in stack.stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=documents, dry_run=True),
            metadata=stack.metadata,
            timeout=60,
        )
    ]
    summaries = [e.summary for e in events if e.HasField("summary")]
    assert len(summaries) == 1
    results = sorted(summaries[0].documents, key=lambda r: r.index)
    fine, huge, bad_id = results
    assert not fine.HasField("error") and fine.chunk_count > 0
    assert summaries[0].documents_failed == 2
    for failed, field in ((huge, "text"), (bad_id, "document_id")):
        named = [v.field for v in failed.error.field_violations]
        assert any(field in f for f in named), (field, named)
    await _healthy(stack)


# -- SQL: millions of rows, at most the cap ---------------------------------------------


@pytest.fixture
async def sql_process(pg_url: str, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    service = await start_service(
        "services.sql",
        "SQL_PORT",
        tmp_path,
        {
            "DATABASE_URL": pg_url,
            "TANDEM_DATA_DIR": str(tmp_path),
            "SQL_REFERENCE_DATE": "2025-06-30",
            # SQL databases serve no tenant unless told (issue 18)
            "SQL_DATABASE_TENANTS": "warehouse=limits",
        },
    )
    yield service
    service.stop()


class RssSampler:
    """Samples a process's resident memory every few milliseconds."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = self.process.memory_info().rss
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            await asyncio.sleep(0.005)

    async def __aenter__(self) -> RssSampler:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task


@contextlib.asynccontextmanager
async def bounded_growth(sql: ServiceProcess, limit_mib: float = 64) -> AsyncIterator[None]:
    """Warm the process, then sample its memory around the block: it may grow less than
    ``limit_mib``."""
    await _execute(sql.address, "SELECT g FROM generate_series(1, 10) AS g", 10)
    baseline = psutil.Process(sql.pid).memory_info().rss
    async with RssSampler(sql.pid) as rss:
        yield
    grew_mib = (rss.peak - baseline) / MIB
    assert grew_mib < limit_mib, f"SQL process grew {grew_mib:.0f} MiB"


MILLIONS = (
    "SELECT a.g AS a, b.g AS b, c.g AS c FROM generate_series(1, 1000) AS a(g) "
    "CROSS JOIN generate_series(1, 1000) AS b(g) CROSS JOIN generate_series(1, 100) AS c(g)"
)
# Five million rows of 4 KB (two series, each within the gate's bound on a series).
WIDE = (
    "SELECT a.g, repeat('x', 4000) AS filler FROM generate_series(1, 1000) AS a(g) "
    "CROSS JOIN generate_series(1, 5000) AS b(g)"
)


async def _execute(address: str, sql: str, max_rows: int) -> tuple[spb.SqlResult, float]:
    async with grpc.aio.insecure_channel(address) as channel:
        started = time.monotonic()
        reply = await spb_grpc.SqlServiceStub(channel).ExecuteSql(
            spb.ExecuteSqlRequest(tenant_id="limits", sql=sql, max_rows=max_rows), timeout=30
        )
    return reply.result, time.monotonic() - started


async def test_a_query_of_millions_of_rows_returns_the_cap_with_bounded_memory(
    sql_process: ServiceProcess,
):
    address = sql_process.address
    async with bounded_growth(sql_process):
        default_cap, _ = await _execute(address, MILLIONS, 0)
        row_cap, took_s = await _execute(address, MILLIONS, 1000)
        size_cap, _ = await _execute(address, WIDE, 1000)
    assert len(default_cap.rows) == 50 and default_cap.truncated
    assert len(row_cap.rows) == 1000 and row_cap.truncated
    assert row_cap.truncation_reason == spb.TRUNCATION_REASON_ROW_CAP
    assert size_cap.truncated and size_cap.truncation_reason == spb.TRUNCATION_REASON_SIZE_CAP
    assert size_cap.ByteSize() <= 2 * MIB
    # 100 million rows were never produced: the cursor stopped at the cap.
    assert took_s < 5.0
    assert await health(address) == "SERVING"


# One value of about 50 MB each: compressible and not, a text, an array, a jsonb. Built
# from rows (1.5 million of them, a cross join of two series): the gate refuses a value
# built that large from constants, but not one read or aggregated from data, which can be
# as large as the data is.
_ROWS = "FROM generate_series(1, 1000) AS a(g) CROSS JOIN generate_series(1, 1500) AS b(g)"
_MD5 = "md5(a.g::text || '.' || b.g::text)"
HUGE_VALUES = {
    "compressible": "SELECT string_agg(CASE WHEN a.g > 0 THEN repeat('x', 32) "
    f"ELSE {_MD5} END, '') AS blob {_ROWS}",
    "md5s": f"SELECT string_agg({_MD5}, '') AS blob {_ROWS}",
    "array": f"SELECT array_agg({_MD5}) AS blob {_ROWS}",
    "jsonb": f"SELECT jsonb_agg({_MD5}) AS blob {_ROWS}",
}


@pytest.mark.parametrize("sql", list(HUGE_VALUES.values()), ids=list(HUGE_VALUES))
async def test_a_single_huge_value_stays_within_bounded_memory(
    sql_process: ServiceProcess, sql: str
):
    address = sql_process.address
    async with bounded_growth(sql_process):
        result, _ = await _execute(address, sql, 1)
        # The same value after two small rows: they come back, the huge one never does.
        middle, _ = await _execute(
            address,
            'SELECT g AS id, CASE WHEN g = 3 THEN blob END AS "Blob" '
            f"FROM ({sql}) AS huge CROSS JOIN generate_series(1, 5) AS g ORDER BY g",
            10,
        )
    assert result.truncated and not result.rows
    assert result.truncation_reason == spb.TRUNCATION_REASON_SIZE_CAP
    assert [c.name for c in result.columns] == ["blob"]
    assert middle.truncated and middle.truncation_reason == spb.TRUNCATION_REASON_SIZE_CAP
    assert [c.name for c in middle.columns] == ["id", "Blob"]
    assert [row.values[0].int_value for row in middle.rows] == [1, 2]


async def test_many_values_each_under_the_cap_stay_within_bounded_memory(
    sql_process: ServiceProcess,
):
    """Each value fits the cap alone, but a fetch of a couple of hundred would not."""
    address = sql_process.address
    async with bounded_growth(sql_process):
        result, _ = await _execute(
            address,
            "SELECT g, lpad(md5(g::text), 960000, 'x') AS filler "
            "FROM generate_series(1, 1000) AS g",
            1000,
        )
    assert result.truncated and result.truncation_reason == spb.TRUNCATION_REASON_SIZE_CAP
    assert len(result.rows) == 1 and result.ByteSize() <= 2 * MIB
