"""Scans and images through the real retrieval server (issue 48 item 3): extracted by OCR
in the extraction worker, chunked, embedded by the real model, stored in the embedded
Postgres and found by Search at the page they came from, with the ingest report naming
the pages OCR read and their confidence and the page it left out.

Before this change the scanned PDF failed ("no text layer, OCR not available") and the
PNG and TIFF as unsupported types: nothing of them could be found.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import pytest

from tandem.v1 import retrieval_service_pb2 as pb
from tests.documents import (
    LIBTASN1_CODING,
    LIBTASN1_PAGE,
    LIBTASN1_PARSER,
    image_bytes,
    scanned_page,
    scanned_pdf,
    tiff_pages,
)
from tests.integration.retrieval.stack import (
    Retrieval,
    ingest,
    new_tenant,
    query_one,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("tesseract") is None,
        reason="no tesseract: `make ocr` (part of `make setup`, as root) installs it",
    ),
]


def _file(document_id: str, data: bytes, name: str) -> pb.DocumentInput:
    return pb.DocumentInput(document_id=document_id, content=data, file_name=name)


def _files() -> list[pb.DocumentInput]:
    unreadable = scanned_page(["Quarterly refund totals by region"] * 3, blur=5.0)
    manual = scanned_pdf(
        [["GNU Libtasn1 manual, scanned copy."], scanned_page(LIBTASN1_PAGE), unreadable]
    )
    return [
        _file("manual", manual, "libtasn1-scan.pdf"),
        _file("photo", image_bytes(scanned_page(LIBTASN1_PARSER), "JPEG"), "photo.jpg"),
        _file(
            "stack",
            tiff_pages([scanned_page(LIBTASN1_CODING), scanned_page(LIBTASN1_PARSER[:1])]),
            "stack.tif",
        ),
    ]


async def _top(retrieval: Retrieval, tenant: str, query: str) -> tuple[str, str, str]:
    reply = await retrieval.stub.Search(pb.SearchRequest(tenant_id=tenant, query=query, top_k=3))
    assert reply.hits, query
    hit = reply.hits[0]
    return hit.document_id, hit.section, hit.text


async def test_scans_and_images_are_ingested_searchable_by_page_with_ocr_confidence_reported(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval()
    tenant = new_tenant(pg_url, "ocr")
    _, summary = await ingest(retrieval.stub, tenant, _files())
    results = {d.document_id: d for d in summary.documents}
    assert summary.documents_included == 3, summary
    assert {k: r.detected_type for k, r in results.items()} == {
        "manual": "PDF", "photo": "JPEG", "stack": "TIFF",
    }  # fmt: skip
    manual_notes = list(results["manual"].extraction_notes)
    assert manual_notes[0].startswith("read by OCR (mean word confidence, 0-100): page 2: ")
    assert manual_notes[1].startswith(
        "not indexed, OCR confidence under the floor of 70 (RETRIEVAL_OCR_MIN_CONFIDENCE): page 3"
    )
    assert (
        results["stack"]
        .extraction_notes[0]
        .startswith("read by OCR (mean word confidence, 0-100): page 1: ")
    )

    # Each scanned passage is found by its own words, cited at its page (or "image").
    document, section, text = await _top(retrieval, tenant, "is the ASN.1 parser case sensitive")
    assert (document, section) == ("manual", "page 2") and "case sensitive" in text
    document, section, text = await _top(retrieval, tenant, "DER encoding from assignments")
    assert (document, section) == ("stack", "page 1") and "asn1Coding generates" in text
    document, section, _ = await _top(retrieval, tenant, "asn1Parser generates an array")
    assert (document, section) == ("photo", "image")
    # The page under the floor was not indexed: no chunk cites it.
    pages = query_one(
        pg_url,
        "SELECT array_agg(DISTINCT section ORDER BY section) FROM retrieval_chunks"
        " WHERE tenant_id = %s AND document_id = 'manual'",
        (tenant,),
    )
    assert pages == ["page 1", "page 2"], pages


async def test_with_ocr_off_a_scan_fails_with_a_message_saying_how_to_enable_it(
    make_retrieval: Callable[..., Any], pg_url: str
) -> None:
    retrieval = await make_retrieval(RETRIEVAL_OCR="off")
    tenant = new_tenant(pg_url, "ocr-off")
    scan = _file("manual", scanned_pdf([scanned_page(LIBTASN1_PAGE)]), "scan.pdf")
    _, summary = await ingest(retrieval.stub, tenant, [scan, _files()[1]])
    assert summary.documents_failed == 2, summary
    manual, photo = summary.documents
    assert manual.error.reason == photo.error.reason == "NO_TEXT_LAYER"
    assert manual.error.message.startswith("no text layer, OCR is off (RETRIEVAL_OCR=off)")
    assert photo.error.message.startswith("is a JPEG image, whose text only OCR reads: OCR is off")
    assert "tesseract-ocr" in photo.error.message
