"""Issue 46, item 10, from the attacker's side: control characters in any text field of a
public request, through the gateway in front of the real services and Postgres.

A NUL in a document's uri, category or metadata once went as far as the database, and
the error named field "query". Now every such value is refused before anything is stored
or searched, naming the field: INVALID_ARGUMENT for the call, or, inside an ingest batch,
that document alone FAILED with INVALID_ARGUMENT naming ``documents[i].<field>``. A
document's body is the exception (issue 48): it is cleaned, never stored with a control
character, and the report says how many were removed.
"""

from __future__ import annotations

from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf import struct_pb2

from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tests.faults.contract import assert_contract, outcome
from tests.faults.inprocess import Stack, pg_url, stack

__all__ = ["pg_url", "stack"]

pytestmark = pytest.mark.integration


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


async def test_control_characters_in_search_fields_are_refused_naming_the_field(stack: Stack):
    cases = [
        (rpb.SearchFilter(metadata=_struct({"team": "a\x00b"})), "filter.metadata.team"),
        (rpb.SearchFilter(metadata=_struct({"te\x00am": "sales"})), "filter.metadata"),
        (
            rpb.SearchFilter(metadata=_struct({"tags": ["ok", "\x1b[2J"]})),
            "filter.metadata.tags[1]",
        ),
        (rpb.SearchFilter(categories=["policy\x00"]), "filter.categories[0]"),
        (rpb.SearchFilter(categories=["po\nlicy"]), "filter.categories[0]"),
    ]
    for search_filter, field in cases:
        request = gpb.GatewayServiceSearchRequest(query="refund policy", filter=search_filter)
        seen = await outcome(stack.stub.Search(request, metadata=stack.metadata, timeout=20))
        assert seen is not None, f"accepted {search_filter}"
        assert (seen.code, seen.reason, seen.fields) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_CHARACTER",
            [field],
        )
        assert_contract(seen)


async def test_a_document_with_a_control_character_fails_alone_naming_the_field(stack: Stack):
    documents = [
        rpb.DocumentInput(document_id="uri", uri="crm://notes/1\x00", text="Refunds in 30 days."),
        rpb.DocumentInput(document_id="category", category="pol\x00icy", text="Refunds."),
        rpb.DocumentInput(
            document_id="key", metadata=_struct({"own\x00er": "ops"}), text="Refunds."
        ),
        rpb.DocumentInput(
            document_id="value", metadata=_struct({"owner": "o\x00ps"}), text="Refunds."
        ),
        rpb.DocumentInput(document_id="title", title="\x1b]0;pwned\x07", text="Refunds."),
        rpb.DocumentInput(document_id="text", text="Refunds\x00 within \x1b[1m30\x1b[0m days."),
        rpb.DocumentInput(
            document_id="fine",
            category="policy",
            metadata=_struct({"owner": "line one\nline two"}),
            text="Refunds are granted\twithin 30 days.\r\n\fPage two.",
        ),
    ]
    request = gpb.GatewayServiceIngestDocumentsRequest(documents=documents)
    events = [
        e async for e in stack.stub.IngestDocuments(request, metadata=stack.metadata, timeout=60)
    ]
    results = {
        e.document_finished.document_id: e.document_finished
        for e in events
        if e.HasField("document_finished")
    }
    refused = {
        doc_id: (r.error.code, r.error.reason, [v.field for v in r.error.field_violations])
        for doc_id, r in results.items()
        if r.outcome == rpb.DOCUMENT_OUTCOME_FAILED
    }
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert refused == {
        "uri": (invalid, "INVALID_CHARACTER", ["documents[0].uri"]),
        "category": (invalid, "INVALID_CHARACTER", ["documents[1].category"]),
        "key": (invalid, "INVALID_CHARACTER", ["documents[2].metadata"]),
        "value": (invalid, "INVALID_CHARACTER", ["documents[3].metadata.owner"]),
        "title": (invalid, "INVALID_CHARACTER", ["documents[4].title"]),
    }
    assert results["fine"].outcome == rpb.DOCUMENT_OUTCOME_INCLUDED
    assert results["text"].outcome == rpb.DOCUMENT_OUTCOME_INCLUDED
    assert list(results["text"].extraction_notes) == [
        "removed 9 control character(s) and terminal escape(s)"
    ]
    with psycopg.connect(stack.pg_url) as conn:
        stored = conn.execute(
            "SELECT d.document_id, string_agg(c.body, ' ') FROM retrieval_documents d "
            "JOIN retrieval_chunks c USING (tenant_id, document_id) "
            "WHERE d.tenant_id = %s GROUP BY 1 ORDER BY 1",
            (stack.tenant,),
        ).fetchall()
    assert [row[0] for row in stored] == ["fine", "text"]
    assert stored[1][1] == "Refunds within 30 days."


async def test_an_uploads_header_is_checked_like_an_ingested_document(stack: Stack):
    async def parts():
        yield gpb.GatewayServiceUploadDocumentRequest(
            header=gpb.GatewayServiceUploadHeader(
                document=rpb.DocumentInput(
                    document_id="upload", uri="file:///a\x00.txt", file_name="a.txt"
                )
            )
        )
        yield gpb.GatewayServiceUploadDocumentRequest(chunk=b"Refunds within 30 days.")

    events = [e async for e in stack.stub.UploadDocument(parts(), metadata=stack.metadata)]
    [result] = [e.document_finished for e in events if e.HasField("document_finished")]
    assert result.outcome == rpb.DOCUMENT_OUTCOME_FAILED
    assert [v.field for v in result.error.field_violations] == ["documents[0].uri"]
