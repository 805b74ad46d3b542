"""Files as companies keep them, sent as bytes through the gateway and extracted on the
server: each one included with its pages, slides and sheets as the sections search
returns, or failed with its reason; one bad file never costs the others."""

from __future__ import annotations

import io

import openpyxl

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.documents import (
    deck,
    encrypted,
    image_only_pdf,
    pdf_pages,
    policy_docx,
    workbook_bytes,
    zip_bomb,
)
from tests.integration.gateway.stack import Gateway, bearer
from tests.integration.retrieval.stack import new_tenant

REPORT = [
    ["Quarterly report", "Revenue grew in every region."],
    ["Risks", "Churn rose sharply among small accounts in the north."],
    ["Outlook", "We expect steady growth next year."],
]
HANDBOOK = b"""<!doctype html><html><head><title>Support handbook</title>
<script>track()</script><style>p{}</style></head><body>
<nav>Home | Pricing | Careers</nav>
<main><h1>Support handbook</h1><h2>Escalations</h2>
<p>Severity one incidents page the on-call engineer within five minutes.</p></main>
<footer>Copyright Careers</footer></body></html>"""


def _file(name: str, content: bytes) -> rpb.DocumentInput:
    return rpb.DocumentInput(document_id=name, content=content, file_name=name, category="files")


def _files() -> list[rpb.DocumentInput]:
    return [
        _file("q3/report.pdf", pdf_pages(REPORT, title="Q3 report")),
        _file("policy.docx", policy_docx()),
        _file("roadmap.pptx", deck()),
        _file("targets.xlsx", workbook_bytes(order_rows=3)),
        _file("handbook.html", HANDBOOK),
        _file("latin.txt", "Café opening hours are nine to five.".encode("cp1252")),
        _file("scan.pdf", image_only_pdf(pages=2)),
        _file("locked.pdf", encrypted(pdf_pages([["secret"]]), user_password="s3cret")),
        _file("bomb.docx", zip_bomb(300 * 1024 * 1024)),
        _file("broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50),
    ]


async def _ingest(gateway: Gateway, key: str, docs: list[rpb.DocumentInput]) -> rpb.IngestSummary:
    request = gpb.GatewayServiceIngestDocumentsRequest(documents=docs)
    events = [e async for e in gateway.stub.IngestDocuments(request, metadata=bearer(key))]
    assert events[-1].HasField("summary")
    return events[-1].summary


async def _top(gateway: Gateway, key: str, query: str) -> tuple[str, str]:
    reply = await gateway.stub.Search(
        gpb.GatewayServiceSearchRequest(query=query, top_k=3), metadata=bearer(key)
    )
    assert reply.hits, query
    return reply.hits[0].document_id, reply.hits[0].section


async def test_files_are_extracted_on_the_server_and_every_one_is_accounted_for(
    gateway: Gateway, pg_url: str
) -> None:
    key = await gateway.key(new_tenant(pg_url, "files"))
    summary = await _ingest(gateway, key, _files())
    outcome = {d.document_id: d for d in summary.documents}
    included = {"q3/report.pdf", "policy.docx", "roadmap.pptx", "targets.xlsx", "handbook.html"}
    included |= {"latin.txt"}
    for name in included:
        assert outcome[name].outcome == rpb.DOCUMENT_OUTCOME_INCLUDED, outcome[name]
        assert outcome[name].chunk_count > 0
    failed = {
        "scan.pdf": ("NO_TEXT_LAYER", "no text layer, OCR found no text"),
        "locked.pdf": ("ENCRYPTED", ""),
        "bomb.docx": ("TOO_LARGE", ""),
        "broken.pdf": ("CORRUPT", ""),
    }
    for name, (reason, message) in failed.items():
        result = outcome[name]
        assert result.outcome == rpb.DOCUMENT_OUTCOME_FAILED, result
        assert result.error.reason == reason, (name, result.error)
        assert result.error.message.startswith(message), result.error.message
        (violation,) = result.error.field_violations
        assert violation.field == f"documents[{result.index}].content"
    assert summary.documents_included == 6 and summary.documents_failed == 4
    # The report says what each file was read as, and how text was decoded.
    assert {name: outcome[name].detected_type for name in included} == {
        "q3/report.pdf": "PDF", "policy.docx": "DOCX", "roadmap.pptx": "PPTX",
        "targets.xlsx": "XLSX", "handbook.html": "HTML", "latin.txt": "TEXT",
    }  # fmt: skip
    assert outcome["latin.txt"].encoding == "cp1252"

    # Search returns each passage with where it came from: page, slide, sheet, section.
    assert await _top(gateway, key, "churn among small accounts in the north") == (
        "q3/report.pdf",
        "page 2",
    )
    assert await _top(gateway, key, "stress the migration date in the roadmap") == (
        "roadmap.pptx",
        "slide 1 · Roadmap 2025",
    )
    document, section = await _top(gateway, key, "EMEA region owner Ana target")
    assert (document, section) == ("targets.xlsx", "sheet Regions")
    document, section = await _top(gateway, key, "severity one incidents on-call engineer")
    assert document == "handbook.html" and section.endswith("Escalations")
    assert (await _top(gateway, key, "Café opening hours"))[0] == "latin.txt"
    # The page chrome was dropped: nothing from the navigation or footer was stored.
    nav = await gateway.stub.Search(
        gpb.GatewayServiceSearchRequest(query="Careers", top_k=5, mode=rpb.SEARCH_MODE_SPARSE),
        metadata=bearer(key),
    )
    assert "handbook.html" not in {hit.document_id for hit in nav.hits}

    # The same files again are recognised unchanged; a changed workbook replaces its copy.
    again = await _ingest(gateway, key, _files()[:6])
    assert again.documents_unchanged == 6
    changed = openpyxl.load_workbook(io.BytesIO(workbook_bytes(order_rows=3)))
    changed["Regions"].append(["LATAM", "Rui", 900.0])
    buffer = io.BytesIO()
    changed.save(buffer)
    replaced = await _ingest(gateway, key, [_file("targets.xlsx", buffer.getvalue())])
    (result,) = replaced.documents
    assert result.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED and result.replaced


async def test_a_document_with_both_text_and_content_is_refused_naming_them(
    gateway: Gateway, pg_url: str
) -> None:
    key = await gateway.key(new_tenant(pg_url, "files"))
    both = rpb.DocumentInput(document_id="both", text="hello", content=b"hello")
    summary = await _ingest(gateway, key, [both])
    (result,) = summary.documents
    assert result.outcome == rpb.DOCUMENT_OUTCOME_FAILED
    assert result.error.message == "set one of text and content, not both"


async def test_what_extraction_left_out_is_in_the_report(gateway: Gateway, pg_url: str) -> None:
    key = await gateway.key(new_tenant(pg_url, "files"))
    summary = await _ingest(gateway, key, [_file("orders.xlsx", workbook_bytes(order_rows=2100))])
    (result,) = summary.documents
    assert result.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED and result.detected_type == "XLSX"
    (note,) = result.extraction_notes
    assert "Orders" in note and "2000" in note and "2100" in note, note
