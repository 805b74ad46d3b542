"""Uploaded files cannot slow or break another tenant's ingest (issue 46, items 2 and 3).

Through the real retrieval server (embedded Postgres, the real model over gRPC),
configured from ``RETRIEVAL_*`` the way an operator does. Each attack is a small file:
an amplified DOCX (a 73 KB archive of 5 MiB of tiny paragraphs, under the 200:1 zip
bomb guard; 131 s of CPU before, refused at the paragraph limit while streaming now), a
slow but legal DOCX (just under that limit), and ``'<p>text</p>' + '</' * N`` (quadratic
in Python's HTML parser: 256 KiB took 7.6 s of CPU before, a millisecond now).

Each test failed on the code before the fix: (a) the amplified file outlived the 10 s
deadline; (b) tenant B's one document waited behind tenant A's six files in the shared
six-thread pool; (c) the page took longer than 5 s; (d) the thread kept a core busy
after the document's error had been sent.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import grpc
import psutil
import pytest

from tandem.v1 import retrieval_service_pb2 as pb
from tests.documents import amplified_docx, policy_docx, quadratic_html
from tests.faults.inprocess import pg_url
from tests.integration.retrieval.stack import (
    Retrieval,
    new_tenant,
)

__all__ = ["pg_url"]

pytestmark = pytest.mark.integration

AMPLIFIED_PARAGRAPHS = 150_000  # the file: 73 KB, 5 MiB of XML, 134:1
SLOW_PARAGRAPHS = 90_000  # under the paragraph limit: seconds of CPU, legal


def _file(document_id: str, data: bytes, name: str) -> pb.DocumentInput:
    return pb.DocumentInput(document_id=document_id, content=data, file_name=name)


async def _ingest(
    retrieval: Retrieval, tenant: str, documents: list[pb.DocumentInput], **options: Any
) -> pb.IngestSummary:
    request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=documents, **options)
    events = [e async for e in retrieval.stub.IngestDocuments(request, timeout=120)]
    return events[-1].summary


async def _warm(retrieval: Retrieval, tenant: str) -> None:
    """One small file first: the workers are up (starting one costs a second of imports
    once per service, which is not what these tests measure)."""
    warm = await _ingest(retrieval, tenant, [_file("warm", policy_docx(), "warm.docx")])
    assert warm.documents_included == 1


def _workers() -> list[psutil.Process]:
    """This test process's extraction workers (none where extraction runs in threads)."""
    return [
        child
        for child in psutil.Process().children(recursive=True)
        if "_extract_main" in " ".join(child.cmdline())
    ]


async def test_an_amplified_docx_is_refused_at_once_with_its_cpu_bounded(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_EXTRACT_TIMEOUT_S="10")
    tenant = new_tenant(pg_url, "amplified")
    await _warm(retrieval, tenant)
    data = amplified_docx(AMPLIFIED_PARAGRAPHS)
    assert len(data) < 100_000
    started = time.monotonic()
    summary = await _ingest(retrieval, tenant, [_file("bomb", data, "report.docx")])
    took = time.monotonic() - started
    (result,) = summary.documents
    assert (result.error.reason, result.error.code) == (
        "TOO_LARGE",
        grpc.StatusCode.INVALID_ARGUMENT.value[0],
    ), result.error
    assert "paragraphs" in result.error.message
    print(f"amplified DOCX ({len(data):,} bytes) refused in {took:.2f} s")
    assert took < 5.0, f"refused after {took:.1f} s"


async def test_another_tenants_ingest_is_not_queued_behind_six_heavy_uploads(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_EXTRACT_TIMEOUT_S="30")
    tenant_a, tenant_b = new_tenant(pg_url, "heavy-a"), new_tenant(pg_url, "heavy-b")
    slow = amplified_docx(SLOW_PARAGRAPHS)
    for tenant in (tenant_a, tenant_b):
        await _warm(retrieval, tenant)
    calls_a = [
        asyncio.create_task(_ingest(retrieval, tenant_a, [_file(f"a-{n}", slow, "a.docx")]))
        for n in range(6)
    ]
    try:
        await asyncio.sleep(0.5)  # A's six files are being read (or wait their turn)
        started = time.monotonic()
        summary = await asyncio.wait_for(
            _ingest(retrieval, tenant_b, [_file("b", policy_docx(), "policy.docx")]), 30
        )
        took = time.monotonic() - started
    finally:
        for call in calls_a:
            call.cancel()
        await asyncio.gather(*calls_a, return_exceptions=True)
    print(f"tenant B's one document while A sends six heavy files: {took:.2f} s")
    assert summary.documents_included == 1, summary
    assert took <= 5.0, f"tenant B's one document took {took:.1f} s behind tenant A's six"


async def test_a_quadratic_html_page_of_256_kib_answers_within_5_s(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_EXTRACT_TIMEOUT_S="30")
    tenant = new_tenant(pg_url, "quadratic")
    await _warm(retrieval, tenant)
    page = quadratic_html(256 * 1024)
    started = time.monotonic()
    summary = await _ingest(retrieval, tenant, [_file("page", page, "page.html")], dry_run=True)
    took = time.monotonic() - started
    (result,) = summary.documents
    print(f"256 KiB quadratic HTML answered in {took:.2f} s")
    assert result.outcome == pb.DOCUMENT_OUTCOME_INCLUDED, result
    assert took <= 5.0, f"a 256 KiB page took {took:.1f} s"


async def test_no_worker_runs_past_the_extraction_deadline(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_EXTRACT_TIMEOUT_S="0.5")
    tenant = new_tenant(pg_url, "deadline")
    await _warm(retrieval, tenant)
    ready = {w.pid for w in _workers()}
    summary = await _ingest(
        retrieval, tenant, [_file("slow", amplified_docx(SLOW_PARAGRAPHS), "slow.docx")]
    )
    (result,) = summary.documents
    assert result.error.reason == "EXTRACTION_TIMEOUT", result.error
    # The answer is out: nothing works on the file any more, neither a thread of this
    # process (as in the old thread pool) nor a worker process.
    own = sum(psutil.Process().cpu_times()[:2])
    alive = [w for w in _workers() if w.pid in ready]
    used = {w.pid: sum(w.cpu_times()[:2]) for w in alive}
    await asyncio.sleep(1.0)
    assert sum(psutil.Process().cpu_times()[:2]) - own < 0.4, "work went on in the service"
    assert ready, "extraction ran in no worker process"
    assert len(alive) < len(ready), "the worker that read the file was not killed"
    for worker in alive:
        assert sum(worker.cpu_times()[:2]) - used[worker.pid] < 0.2, worker
