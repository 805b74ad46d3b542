"""Tables answered as cells, end to end: a deck, a workbook and a CSV written by the
libraries that write them, ingested through the gateway into a tenant that also has a SQL
warehouse, then asked through Ask with no model configured. The answer is the cell with
its row and column labels in one line, citing the row; a question no row answers is not
answered with a wrong cell; and a question whose answer is in the slides or the sheet
goes to the documents in AUTO mode, though its wording counts ("the number of")."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openpyxl
import pytest
from pptx import Presentation
from pptx.util import Inches

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as rtpb
from tests.integration.gateway.stack import (
    Gateway,
    Router,
    Sql,
    bearer,
    start_gateway,
    start_router,
    start_sql,
)

pytestmark = pytest.mark.integration

RELEASES = [
    ("Version number", "Codename", "Release date"),
    ("10", "buster", "2019-07-06"),
    ("11", "bullseye", "2021-08-14"),
    ("12", "bookworm", "2023-06-10"),
]
# A few lines of /etc/protocols (netbase), as a CSV exported from it would hold them.
PROTOCOLS = [
    ("protocol", "number", "aliases"),
    ("ip", "0", "IP"),
    ("icmp", "1", "ICMP"),
    ("tcp", "6", "TCP"),
    ("udp", "17", "UDP"),
    ("gre", "47", "GRE"),
    ("eigrp", "88", "EIGRP"),
    ("ospf", "89", "OSPFIGP"),
    ("vrrp", "112", "VRRP"),
    ("sctp", "132", "SCTP"),
]
MIRRORS = [
    ("Country", "Mirror host", "Bandwidth (Mbit/s)"),
    ("Austria", "ftp.at.debian.org", 1000),
    ("Brazil", "ftp.br.debian.org", 400),
    ("Japan", "ftp.jp.debian.org", 10000),
    ("Norway", "ftp.no.debian.org", 2500),
]


def _deck() -> bytes:
    presentation = Presentation()
    intro = presentation.slides.add_slide(presentation.slide_layouts[1])
    intro.shapes.title.text = "Release planning"
    intro.placeholders[1].text_frame.text = "Stable releases are supported for three years."
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Debian releases"
    table = slide.shapes.add_table(4, 3, Inches(1), Inches(2), Inches(7), Inches(2)).table
    for r, values in enumerate(RELEASES):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def _workbook() -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Mirrors"
    for row in MIRRORS:
        sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _csv() -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(PROTOCOLS)
    return buffer.getvalue().encode()


@dataclass
class Stack:
    gateway: Gateway
    key: str


@pytest.fixture
async def stack(pg_url, retrieval, telemetry_sink) -> AsyncIterator[Stack]:
    """Tenant ``demo`` reads the demo warehouse: AUTO has a SQL side to choose."""
    sql: Sql = await start_sql(pg_url, telemetry_sink("sql").telemetry, as_configured=True)
    router: Router = await start_router(
        retrieval.server.address, sql.address, telemetry_sink("router").telemetry
    )
    gateway = await start_gateway(
        pg_url,
        telemetry_sink("gateway").telemetry,
        router_addr=router.address,
        retrieval_addr=retrieval.server.address,
        sql_addr=sql.address,
    )
    try:
        key = await gateway.key("demo")
        documents = [
            rpb.DocumentInput(document_id=name, content=content, file_name=name, category="tables")
            for name, content in (
                ("releases.pptx", _deck()),
                ("mirrors.xlsx", _workbook()),
                ("protocols.csv", _csv()),
            )
        ]
        request = gpb.GatewayServiceIngestDocumentsRequest(documents=documents)
        events = [e async for e in gateway.stub.IngestDocuments(request, metadata=bearer(key))]
        summary = events[-1].summary  # the demo tenant outlives a test: unchanged the 2nd time
        assert summary.documents_included + summary.documents_unchanged == 3, summary
        yield Stack(gateway, key)
    finally:
        await gateway.close()
        await router.close()
        await sql.close()


async def _ask(stack: Stack, question: str, mode: rtpb.AskMode.ValueType) -> rtpb.Answer:
    reply = await stack.gateway.stub.Ask(
        gpb.GatewayServiceAskRequest(question=question, mode=mode),
        metadata=bearer(stack.key),
        timeout=60,
    )
    return reply.answer


async def test_a_table_question_is_answered_by_its_cell_in_one_line_citing_the_row(
    stack: Stack,
) -> None:
    answer = await _ask(stack, "What is the protocol number of ospf?", rtpb.ASK_MODE_RETRIEVE)
    assert answer.text == "ospf — number 89 (row 8) [1]", answer.text
    (citation,) = answer.citations
    assert citation.document_id == "protocols.csv"
    assert citation.section == "row 8"  # the CSV's own line number, header on line 1
    assert citation.quote == "| 8 | ospf | 89 | OSPFIGP |"
    assert "eigrp" not in answer.text and "\n" not in answer.text


async def test_a_sheet_cell_cites_its_sheet_and_spreadsheet_row(stack: Stack) -> None:
    answer = await _ask(stack, "What is the bandwidth of the Japan mirror?", rtpb.ASK_MODE_RETRIEVE)
    assert answer.text.startswith("Japan — Bandwidth (Mbit/s) 10000 (row 4)"), answer.text
    assert answer.citations[0].section == "sheet Mirrors, row 4"


async def test_no_matching_row_is_not_answered_with_a_wrong_cell(stack: Stack) -> None:
    answer = await _ask(stack, "What is the protocol number of xtp?", rtpb.ASK_MODE_RETRIEVE)
    for value in ("89", "112", "132", "(row"):
        assert value not in answer.text, answer.text


async def test_slide_and_sheet_questions_route_to_the_documents_in_auto(stack: Stack) -> None:
    slide = await _ask(stack, "What is the version number of bookworm?", rtpb.ASK_MODE_AUTO)
    assert slide.route != rtpb.ROUTE_SQL, slide
    # the row is named by its codename, labelled: it is not the table's first column
    assert slide.text.startswith("Codename bookworm — Version number 12 (row 4)"), slide.text
    assert slide.citations[0].section.startswith("slide 2"), slide.citations[0]
    sheet = await _ask(stack, "What is the bandwidth of the Norway mirror?", rtpb.ASK_MODE_AUTO)
    assert sheet.route != rtpb.ROUTE_SQL, sheet
    assert "2500" in sheet.text and sheet.citations[0].section == "sheet Mirrors, row 5"
