"""RetrievalService through its generated stubs: every RPC, every documented error.

The stack is real: the embedded Postgres, and the real model served by the embedding
service over gRPC. "Postgres unreachable" is a pool pointed at a closed port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.common import Database, Principal, create_channel
from services.retrieval import RetrievalSettings
from services.retrieval._server import RetrievalDeps, create_server
from tandem.v1 import common_pb2
from tandem.v1 import retrieval_service_pb2 as pb
from tandem.v1 import retrieval_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings
from tests.integration.retrieval.stack import (
    Retrieval,
    held_document,
    ingest,
    new_tenant,
    start_retrieval,
    stored_documents,
)

INGEST = "tandem.v1.RetrievalService/IngestDocuments"
DELETE = "tandem.v1.RetrievalService/DeleteDocument"
GET = "tandem.v1.RetrievalService/GetDocument"
LIST = "tandem.v1.RetrievalService/ListDocuments"
SEARCH = "tandem.v1.RetrievalService/Search"
UPDATE_ACL = "tandem.v1.RetrievalService/UpdateDocumentAcl"

LIMITS = RetrievalSettings(max_batch_documents=4, max_document_chars=2000)


@pytest.fixture
async def running(pg_url, embedding, telemetry_sink) -> AsyncIterator[Retrieval]:
    address = embedding.server.address
    settings = RetrievalSettings(
        embedding_addr=address, max_batch_documents=4, max_document_chars=2000
    )
    service = await start_retrieval(
        pg_url, address, telemetry_sink("retrieval").telemetry, settings=settings
    )
    yield service
    await service.close()


@pytest.fixture
def tenant(pg_url) -> str:
    return new_tenant(pg_url)


@dataclass
class DeadStore:
    stub: pb_grpc.RetrievalServiceAsyncStub


@pytest.fixture
async def dead_store(embedding, telemetry_sink, unused_tcp_port) -> AsyncIterator[DeadStore]:
    """A retrieval server whose Postgres is unreachable (nothing listens on the port)."""
    database = Database(
        f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres", timeout_s=0.3
    )
    await database.pool.open(wait=False)
    channel = create_channel(embedding.server.address)
    server, _ = await create_server(
        server_settings("retrieval"),
        telemetry_sink("retrieval").telemetry,
        RetrievalDeps(RetrievalSettings(), database, channel),
    )
    client = create_channel(server.address)
    yield DeadStore(pb_grpc.RetrievalServiceStub(client))
    await server.stop(0)
    await client.close()
    await channel.close()
    await database.close()


async def _error(call, awaitable=None) -> tuple[grpc.StatusCode, list[str], dict[str, str]]:
    """Await ``awaitable`` (default: the call) and return the rich status it failed with."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await (call if awaitable is None else awaitable)
    status = await rpc_status.aio.from_call(call)
    bad, info = error_details_pb2.BadRequest(), error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        if detail.Is(bad.DESCRIPTOR):
            detail.Unpack(bad)
        elif detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    fields = [v.field for v in bad.field_violations]
    return err.value.code(), fields, {"reason": info.reason, **dict(info.metadata)}


async def _stream_error(call) -> tuple[grpc.StatusCode, list[str], dict[str, str]]:
    async def drain() -> None:
        async for _ in call:
            pass

    return await _error(call, drain())


def _doc(document_id: str, text: str, **kw) -> pb.DocumentInput:
    return pb.DocumentInput(document_id=document_id, text=text, **kw)


def _struct(data: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(data)
    return struct


DOCS = [
    _doc(
        "renewal",
        "# Renewal\n\nAcme asked for a ten percent discount on the renewal.",
        title="Acme renewal call",
        category="call_note",
        uri="crm://notes/1",
        metadata=_struct({"region": "emea"}),
        content_type=pb.CONTENT_TYPE_MARKDOWN,
    ),
    _doc("security", "Laptops must use full disk encryption.", category="policy"),
    _doc("pricing", "The Growth tier adds single sign-on and audit logs.", category="guide"),
]


# -- IngestDocuments ----------------------------------------------------------------


@pytest.mark.rpc(INGEST)
async def test_ingest_streams_results_then_exactly_one_summary(running, tenant):
    request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=DOCS)
    events = [e async for e in running.stub.IngestDocuments(request, timeout=30)]
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "summary" and kinds.count("summary") == 1
    assert kinds.count("document_finished") == 3 and "progress" in kinds
    summary = events[-1].summary
    assert not summary.dry_run and summary.documents_total == 3
    assert summary.documents_included == 3 and summary.chunks_written == 3
    assert summary.model_name and summary.duration.ToNanoseconds() > 0
    first = summary.documents[0]
    assert (first.index, first.document_id, first.uri) == (0, "renewal", "crm://notes/1")
    assert first.outcome == pb.DOCUMENT_OUTCOME_INCLUDED and not first.replaced
    assert first.chunk_count == 1 and len(first.content_sha256) == 64


@pytest.mark.rpc(INGEST)
async def test_ingest_derives_a_stable_id_from_the_uri(running, tenant):
    doc = pb.DocumentInput(uri="file:///notes/a.txt", text="Quarterly plan for Acme.")
    _, first = await ingest(running.stub, tenant, [doc])
    _, second = await ingest(running.stub, tenant, [doc])
    assert first.documents[0].document_id == second.documents[0].document_id != ""
    assert second.documents[0].outcome == pb.DOCUMENT_OUTCOME_UNCHANGED


@pytest.mark.rpc(INGEST)
async def test_one_bad_document_never_fails_the_batch(running, tenant):
    docs = [
        _doc("ok", "A perfectly fine document."),
        _doc("blank", "   "),
        _doc("huge", "x " * 1500),
        _doc("meta", "text", metadata=_struct({"": 1})),
        pb.DocumentInput(text="no id and no uri"),
    ]
    request = pb.IngestDocumentsRequest(tenant_id=tenant, documents=docs[:4])
    events = [e async for e in running.stub.IngestDocuments(request, timeout=30)]
    summary = events[-1].summary
    results = {d.document_id: d for d in summary.documents}
    assert results["ok"].outcome == pb.DOCUMENT_OUTCOME_INCLUDED
    expected = {
        "blank": ("EMPTY_TEXT", "documents[1].text"),
        "huge": ("DOCUMENT_TOO_LARGE", "documents[2].text"),
        "meta": ("INVALID_METADATA", "documents[3].metadata"),
    }
    for document_id, (reason, field) in expected.items():
        result = results[document_id]
        assert result.outcome == pb.DOCUMENT_OUTCOME_FAILED
        assert result.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert result.error.reason == reason
        assert [v.field for v in result.error.field_violations] == [field]
    _, only = await ingest(running.stub, tenant, [docs[4]])
    assert only.documents[0].error.field_violations[0].field == "documents[0].document_id"


@pytest.mark.rpc(INGEST)
async def test_a_control_character_fails_its_document_naming_the_field(running, tenant):
    docs = [
        _doc("ok", "Fine\ttext,\r\nover\flines.", metadata=_struct({"k": "a\nb"})),
        pb.DocumentInput(document_id="uri", uri="crm://a\x00", text="text"),
        pb.DocumentInput(document_id="category", category="a\x1bb", text="text"),
        _doc("meta", "text", metadata=_struct({"k": "a\x00b"})),
    ]
    _, summary = await ingest(running.stub, tenant, docs)
    results = {d.document_id: d for d in summary.documents}
    assert results["ok"].outcome == pb.DOCUMENT_OUTCOME_INCLUDED
    for document_id, field in (
        ("uri", "documents[1].uri"),
        ("category", "documents[2].category"),
        ("meta", "documents[3].metadata.k"),
    ):
        error = results[document_id].error
        assert (error.code, error.reason, [v.field for v in error.field_violations]) == (
            grpc.StatusCode.INVALID_ARGUMENT.value[0],
            "INVALID_CHARACTER",
            [field],
        )


@pytest.mark.rpc(INGEST)
@pytest.mark.parametrize(
    ("tenant_id", "documents", "policy", "field", "reason"),
    [
        ("", DOCS[:1], None, "tenant_id", "INVALID_ARGUMENT"),
        ("Bad Tenant!", DOCS[:1], None, "tenant_id", "INVALID_ARGUMENT"),
        ("never-registered", DOCS[:1], None, "tenant_id", "UNKNOWN_TENANT"),
        (None, [], None, "documents", "INVALID_ARGUMENT"),
        (None, DOCS + DOCS, None, "documents", "BATCH_TOO_LARGE"),
        (
            None,
            DOCS[:1],
            [pb.REDACTION_KIND_EMAIL_ADDRESS, pb.REDACTION_KIND_API_KEY],
            "redaction_policy.keep_kinds[1]",
            "INVALID_ARGUMENT",
        ),
    ],
)
async def test_ingest_invalid_argument_names_the_field(
    running, tenant, *, tenant_id, documents, policy, field, reason
):
    request = pb.IngestDocumentsRequest(
        tenant_id=tenant if tenant_id is None else tenant_id, documents=documents
    )
    if policy is not None:
        request.redaction_policy.keep_kinds.extend(policy)
    code, fields, info = await _stream_error(running.stub.IngestDocuments(request, timeout=30))
    assert (code, fields, info["reason"]) == (grpc.StatusCode.INVALID_ARGUMENT, [field], reason)


@pytest.mark.rpc(INGEST)
async def test_ingest_database_unavailable(dead_store):
    request = pb.IngestDocumentsRequest(tenant_id="acme", documents=DOCS[:1], dry_run=True)
    code, _, info = await _stream_error(dead_store.stub.IngestDocuments(request, timeout=30))
    assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")


@pytest.mark.rpc(INGEST)
async def test_ingest_embedding_failure_fails_documents_not_the_call(
    pg_url, telemetry_sink, unused_tcp_port, tenant
):
    running = await start_retrieval(
        pg_url, f"127.0.0.1:{unused_tcp_port}", telemetry_sink().telemetry
    )
    try:
        _, summary = await ingest(running.stub, tenant, DOCS[:2])
        assert summary.documents_failed == 2
        assert summary.documents[0].error.code == grpc.StatusCode.UNAVAILABLE.value[0]
        _, dry = await ingest(running.stub, tenant, DOCS[:2], dry_run=True)
        assert dry.documents_included == 2 and dry.model_name == ""
    finally:
        await running.close()


def _checkpoint(status: Any) -> pb.IngestCheckpoint | None:
    for detail in status.details if status else []:
        found = pb.IngestCheckpoint()
        if detail.Unpack(found):
            return found
    return None


@pytest.mark.rpc(INGEST)
async def test_a_call_cut_midway_reports_what_it_committed(pg_url, embedding, telemetry_sink):
    """Issue 46 item 7: a call cut at its deadline after two of four documents: those two
    stay committed, their events came, and the status lists them (IngestCheckpoint), so
    the caller re-sends only the rest. The third is held at its write (another
    transaction locks its row) until the server's deadline ends the call."""
    running = await start_retrieval(
        pg_url,
        embedding.server.address,
        telemetry_sink("retrieval").telemetry,
        server={"default_deadline_s": 4.0},
    )
    tenant = new_tenant(pg_url)
    docs = [_doc(name, f"The {name} note: renewal terms for Acme.") for name in ("a", "b")]
    docs += [_doc("held", "A changed note, held at its write."), _doc("d", "Never reached.")]
    try:
        await ingest(running.stub, tenant, [_doc("held", "The stored copy.")])
        before = stored_documents(pg_url, tenant)
        with held_document(pg_url, tenant, "held"):
            # No deadline from the caller: the server's own ends the call, so its status,
            # not the client's timer, says how it ended.
            call = running.stub.IngestDocuments(
                pb.IngestDocumentsRequest(tenant_id=tenant, documents=docs)
            )
            events: list[pb.IngestDocumentsResponse] = []

            async def drain() -> None:
                async for event in call:
                    events.append(event)

            code, _, info = await _error(call, drain())
        assert (code, info["reason"]) == (grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED")
        checkpoint = _checkpoint(await rpc_status.aio.from_call(call))
        assert checkpoint is not None and checkpoint.documents_total == 4
        finished = [e.document_finished for e in events if e.HasField("document_finished")]
        assert [(d.index, d.document_id) for d in checkpoint.documents] == [(0, "a"), (1, "b")]
        assert [d.document_id for d in finished] == ["a", "b"]
        assert {d.outcome for d in checkpoint.documents} == {pb.DOCUMENT_OUTCOME_INCLUDED}
        # Whole documents in, the held one as it was, the last one not written at all.
        stored = stored_documents(pg_url, tenant)
        assert set(stored) == {"a", "b", "held"} and stored["held"] == before["held"]
        assert {d.document_id: d.content_sha256 for d in checkpoint.documents} == {
            k: stored[k] for k in ("a", "b")
        }
    finally:
        await running.close()


# -- DeleteDocument -----------------------------------------------------------------


@pytest.mark.rpc(DELETE)
async def test_delete_removes_the_document_and_its_chunks(running, tenant):
    await ingest(running.stub, tenant, DOCS)
    reply = await running.stub.DeleteDocument(
        pb.DeleteDocumentRequest(tenant_id=tenant, document_id="renewal")
    )
    assert (reply.document_id, reply.deleted, reply.chunks_deleted) == ("renewal", True, 1)
    hits = await running.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query="renewal discount", top_k=10)
    )
    assert "renewal" not in [h.document_id for h in hits.hits]
    again = await running.stub.DeleteDocument(
        pb.DeleteDocumentRequest(tenant_id=tenant, document_id="renewal", allow_missing=True)
    )
    assert (again.deleted, again.chunks_deleted) == (False, 0)


@pytest.mark.rpc(DELETE)
async def test_delete_missing_document_is_not_found(running, tenant):
    code, _, info = await _error(
        running.stub.DeleteDocument(pb.DeleteDocumentRequest(tenant_id=tenant, document_id="nope"))
    )
    assert (code, info["reason"], info["document_id"]) == (
        grpc.StatusCode.NOT_FOUND,
        "DOCUMENT_NOT_FOUND",
        "nope",
    )


@pytest.mark.rpc(DELETE)
@pytest.mark.parametrize(
    ("tenant_id", "document_id", "field"),
    [("", "x", "tenant_id"), ("UPPER", "x", "tenant_id"), ("acme", "", "document_id"),
     ("acme", "bad\x00id", "document_id"), ("acme", "x" * 257, "document_id")],
)  # fmt: skip
async def test_delete_invalid_argument(running, tenant_id, document_id, field):
    code, fields, _ = await _error(
        running.stub.DeleteDocument(
            pb.DeleteDocumentRequest(tenant_id=tenant_id, document_id=document_id)
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


@pytest.mark.rpc(DELETE)
async def test_delete_database_unavailable(dead_store):
    code, _, info = await _error(
        dead_store.stub.DeleteDocument(pb.DeleteDocumentRequest(tenant_id="acme", document_id="x"))
    )
    assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")


# -- GetDocument --------------------------------------------------------------------


@pytest.mark.rpc(GET)
async def test_get_document_with_and_without_chunks(running, tenant):
    await ingest(running.stub, tenant, DOCS[:1])
    request = pb.GetDocumentRequest(tenant_id=tenant, document_id="renewal")
    bare = await running.stub.GetDocument(request)
    doc = bare.document
    assert (doc.document_id, doc.title, doc.uri, doc.category) == (
        "renewal",
        "Acme renewal call",
        "crm://notes/1",
        "call_note",
    )
    assert doc.metadata["region"] == "emea"
    assert doc.content_type == pb.CONTENT_TYPE_MARKDOWN
    assert doc.chunk_count == 1 and doc.char_count > 0 and doc.model_name
    assert doc.create_time.seconds > 0 and doc.update_time.seconds > 0
    assert not bare.chunks
    request.include_chunks = True
    full = await running.stub.GetDocument(request)
    assert [(c.ordinal, c.section, c.document_id) for c in full.chunks] == [
        (0, "Renewal", "renewal")
    ]
    assert full.chunks[0].char_count == len(full.chunks[0].text) > 0


@pytest.mark.rpc(GET)
async def test_get_document_errors(running, tenant, dead_store):
    code, _, info = await _error(
        running.stub.GetDocument(pb.GetDocumentRequest(tenant_id=tenant, document_id="nope"))
    )
    assert (code, info["reason"]) == (grpc.StatusCode.NOT_FOUND, "DOCUMENT_NOT_FOUND")
    for tenant_id, document_id, field in (("", "x", "tenant_id"), (tenant, "", "document_id")):
        code, fields, _ = await _error(
            running.stub.GetDocument(
                pb.GetDocumentRequest(tenant_id=tenant_id, document_id=document_id)
            )
        )
        assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])
    code, _, info = await _error(
        dead_store.stub.GetDocument(pb.GetDocumentRequest(tenant_id="acme", document_id="x"))
    )
    assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")


# -- UpdateDocumentAcl --------------------------------------------------------------


@pytest.mark.rpc(UPDATE_ACL)
async def test_update_acl_restricts_and_reopens_the_document(running, tenant):
    await ingest(running.stub, tenant, DOCS[:1])
    carol = Principal.of("carol").headers()
    reply = await running.stub.UpdateDocumentAcl(
        pb.UpdateDocumentAclRequest(
            tenant_id=tenant,
            document_id="renewal",
            acl=pb.DocumentAcl(principals=["bob", "alice", "bob"], groups=["sales"]),
        )
    )
    assert (reply.document_id, reply.chunks_updated, reply.updated) == ("renewal", 1, True)
    assert (list(reply.acl.principals), list(reply.acl.groups)) == (["alice", "bob"], ["sales"])
    got = await running.stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=tenant, document_id="renewal")
    )
    assert list(got.document.acl.principals) == ["alice", "bob"]
    code, _, _ = await _error(
        running.stub.GetDocument(
            pb.GetDocumentRequest(tenant_id=tenant, document_id="renewal"), metadata=carol
        )
    )
    assert code == grpc.StatusCode.NOT_FOUND
    opened = await running.stub.UpdateDocumentAcl(
        pb.UpdateDocumentAclRequest(tenant_id=tenant, document_id="renewal")
    )
    assert not opened.acl.principals and not opened.acl.groups
    await running.stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=tenant, document_id="renewal"), metadata=carol
    )


@pytest.mark.rpc(UPDATE_ACL)
async def test_update_acl_not_found_for_missing_and_forbidden_alike(running, tenant):
    await ingest(
        running.stub, tenant, [_doc("hr", "Salary bands.", acl=pb.DocumentAcl(groups=["hr"]))]
    )
    carol = Principal.of("carol").headers()
    missing = await _error(
        running.stub.UpdateDocumentAcl(
            pb.UpdateDocumentAclRequest(tenant_id=tenant, document_id="nope"), metadata=carol
        )
    )
    forbidden = await _error(
        running.stub.UpdateDocumentAcl(
            pb.UpdateDocumentAclRequest(tenant_id=tenant, document_id="hr"), metadata=carol
        )
    )
    assert missing[0] == forbidden[0] == grpc.StatusCode.NOT_FOUND
    assert missing[2]["reason"] == forbidden[2]["reason"] == "DOCUMENT_NOT_FOUND"
    allowed = await running.stub.UpdateDocumentAcl(
        pb.UpdateDocumentAclRequest(tenant_id=tenant, document_id="hr", allow_missing=True),
        metadata=carol,
    )
    assert (allowed.updated, allowed.chunks_updated) == (False, 0)


@pytest.mark.rpc(UPDATE_ACL)
@pytest.mark.parametrize(
    ("tenant_id", "document_id", "acl", "field"),
    [("", "x", {}, "tenant_id"), ("acme", "", {}, "document_id"),
     ("acme", "x", {"groups": [" "]}, "acl.groups[0]"),
     ("acme", "x", {"principals": ["ok", "a\x01"]}, "acl.principals[1]"),
     ("acme", "x", {"groups": ["g" * 257]}, "acl.groups[0]"),
     ("acme", "x", {"principals": [f"p{i}" for i in range(257)]}, "acl.principals")],
)  # fmt: skip
async def test_update_acl_invalid_argument(running, tenant_id, document_id, acl, field):
    code, fields, _ = await _error(
        running.stub.UpdateDocumentAcl(
            pb.UpdateDocumentAclRequest(
                tenant_id=tenant_id, document_id=document_id, acl=pb.DocumentAcl(**acl)
            )
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


@pytest.mark.rpc(UPDATE_ACL)
async def test_update_acl_that_shuts_out_the_caller_is_invalid(running, tenant):
    await ingest(running.stub, tenant, DOCS[:1])
    code, fields, _ = await _error(
        running.stub.UpdateDocumentAcl(
            pb.UpdateDocumentAclRequest(
                tenant_id=tenant, document_id="renewal", acl=pb.DocumentAcl(groups=["hr"])
            ),
            metadata=Principal.of("alice", ["sales"]).headers(),
        )
    )
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["acl"])


@pytest.mark.rpc(UPDATE_ACL)
async def test_update_acl_database_unavailable(dead_store):
    code, _, info = await _error(
        dead_store.stub.UpdateDocumentAcl(
            pb.UpdateDocumentAclRequest(tenant_id="acme", document_id="x")
        )
    )
    assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")


# -- ListDocuments ------------------------------------------------------------------


@pytest.mark.rpc(LIST)
async def test_list_pages_newest_first_and_filters_by_category(running, tenant):
    for doc in DOCS:  # one call each, so update times differ
        await ingest(running.stub, tenant, [doc])
    seen: list[str] = []
    token = ""
    while True:
        page = await running.stub.ListDocuments(
            pb.ListDocumentsRequest(tenant_id=tenant, page_size=2, page_token=token)
        )
        assert len(page.documents) <= 2
        seen += [d.document_id for d in page.documents]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["pricing", "security", "renewal"]
    policies = await running.stub.ListDocuments(
        pb.ListDocumentsRequest(tenant_id=tenant, categories=["policy", "guide"])
    )
    assert [d.document_id for d in policies.documents] == ["pricing", "security"]
    assert policies.next_page_token == ""
    big = await running.stub.ListDocuments(
        pb.ListDocumentsRequest(tenant_id=tenant, page_size=9999)
    )
    assert len(big.documents) == 3


@pytest.mark.rpc(LIST)
async def test_list_errors(running, tenant, pg_url, dead_store):
    await ingest(running.stub, tenant, DOCS[:2])
    first = await running.stub.ListDocuments(pb.ListDocumentsRequest(tenant_id=tenant, page_size=1))
    other = new_tenant(pg_url)
    cases = [
        (pb.ListDocumentsRequest(tenant_id=""), "tenant_id", "INVALID_ARGUMENT"),
        (pb.ListDocumentsRequest(tenant_id=tenant, page_size=-1), "page_size", "INVALID_ARGUMENT"),
        (
            pb.ListDocumentsRequest(tenant_id=tenant, page_token="not-a-token"),
            "page_token",
            "INVALID_PAGE_TOKEN",
        ),
        (
            pb.ListDocumentsRequest(tenant_id=other, page_token=first.next_page_token),
            "page_token",
            "INVALID_PAGE_TOKEN",
        ),
        (
            pb.ListDocumentsRequest(
                tenant_id=tenant, page_token=first.next_page_token, categories=["policy"]
            ),
            "page_token",
            "INVALID_PAGE_TOKEN",
        ),
    ]
    for request, field, reason in cases:
        code, fields, info = await _error(running.stub.ListDocuments(request))
        assert (code, fields, info["reason"]) == (grpc.StatusCode.INVALID_ARGUMENT, [field], reason)
    code, _, info = await _error(
        dead_store.stub.ListDocuments(pb.ListDocumentsRequest(tenant_id="acme"))
    )
    assert (code, info["reason"]) == (grpc.StatusCode.UNAVAILABLE, "DATABASE_UNAVAILABLE")


# -- Search -------------------------------------------------------------------------


@pytest.mark.rpc(SEARCH)
async def test_search_returns_hits_with_ranks_scores_and_timings(running, tenant):
    await ingest(running.stub, tenant, DOCS)
    reply = await running.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query="Acme renewal discount", top_k=2)
    )
    assert not reply.degraded and reply.mode == pb.SEARCH_MODE_HYBRID and not reply.reranked
    assert len(reply.hits) == 2
    hit = reply.hits[0]
    assert (hit.document_id, hit.title, hit.uri, hit.category, hit.section) == (
        "renewal",
        "Acme renewal call",
        "crm://notes/1",
        "call_note",
        "Renewal",
    )
    assert hit.chunk_id and hit.text and hit.ordinal == 0
    assert hit.dense_rank == 1 and hit.sparse_rank == 1
    # weighted RRF: 1 / (k + 1) from each side, the full-text side's weight in [1, 2]
    k = RetrievalSettings().rrf_k
    assert hit.score == hit.fused_score
    assert 2 / (k + 1) - 1e-9 <= hit.score <= 3 / (k + 1) + 1e-9
    assert not hit.HasField("rerank_score")
    assert hit.metadata["region"] == "emea"
    assert {t.stage for t in reply.timings} == {"embed", "database", "total"}
    floored = await running.stub.Search(
        pb.SearchRequest(tenant_id=tenant, query="Acme renewal discount", min_score=hit.score)
    )
    assert [h.document_id for h in floored.hits] == ["renewal"]


def _filter_metadata(metadata: dict[str, str]) -> pb.SearchFilter:
    search_filter = pb.SearchFilter()
    search_filter.metadata.update(metadata)
    return search_filter


@pytest.mark.rpc(SEARCH)
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tenant_id": ""}, "tenant_id"),
        ({"tenant_id": "-bad"}, "tenant_id"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "q" * 2001}, "query"),
        ({"top_k": -1}, "top_k"),
        ({"top_k": 101}, "top_k"),
        ({"candidate_depth": -1}, "candidate_depth"),
        ({"candidate_depth": 1001}, "candidate_depth"),
        ({"candidate_depth": 5, "top_k": 10}, "candidate_depth"),
        ({"candidate_depth": 5}, "candidate_depth"),
        ({"ef_search": -1}, "ef_search"),
        ({"ef_search": 1001}, "ef_search"),
        ({"min_score": -0.5}, "min_score"),
        ({"mode": 7}, "mode"),
        ({"filter": pb.SearchFilter(document_ids=[f"d{i}" for i in range(1001)])},
         "filter.document_ids"),
    ],
)  # fmt: skip
async def test_search_invalid_argument_names_the_field(running, changes, field):
    request = pb.SearchRequest(tenant_id="acme", query="renewal")
    for name, value in changes.items():
        if name == "filter":
            request.filter.CopyFrom(value)
        else:
            setattr(request, name, value)
    code, fields, _ = await _error(running.stub.Search(request))
    assert (code, fields) == (grpc.StatusCode.INVALID_ARGUMENT, [field])


@pytest.mark.rpc(SEARCH)
@pytest.mark.parametrize(
    ("query", "search_filter", "field"),
    [
        ("renewal\x00risk", pb.SearchFilter(), "query"),
        ("renewal", pb.SearchFilter(categories=["ok", "a\x00b"]), "filter.categories[1]"),
        ("renewal", pb.SearchFilter(document_ids=["d\x1b"]), "filter.document_ids[0]"),
        ("renewal", _filter_metadata({"team": "a\x00b"}), "filter.metadata.team"),
        ("renewal", _filter_metadata({"te\x00am": "a"}), "filter.metadata"),
    ],
)
async def test_search_control_characters_are_invalid_character(
    running, query, search_filter, field
):
    request = pb.SearchRequest(tenant_id="acme", query=query, filter=search_filter)
    code, fields, info = await _error(running.stub.Search(request))
    assert (code, fields, info["reason"]) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        [field],
        "INVALID_CHARACTER",
    )


@pytest.mark.rpc(SEARCH)
async def test_search_model_mismatch_is_failed_precondition(running, tenant, pg_url):
    import psycopg

    await ingest(running.stub, tenant, DOCS[:1])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE retrieval_documents SET model_name = 'other/model' WHERE tenant_id = %s",
            (tenant,),
        )
    code, _, info = await _error(
        running.stub.Search(pb.SearchRequest(tenant_id=tenant, query="renewal"))
    )
    assert (code, info["reason"], info["stored_model"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "MODEL_MISMATCH",
        "other/model",
    )


@pytest.mark.rpc(SEARCH)
async def test_search_fails_open_when_postgres_is_unreachable(dead_store):
    reply = await dead_store.stub.Search(pb.SearchRequest(tenant_id="acme", query="renewal"))
    assert reply.degraded and not reply.hits
    assert [(d.reason, d.component) for d in reply.degradations] == [
        (common_pb2.DEGRADATION_REASON_DATABASE_UNAVAILABLE, "postgres")
    ]
    assert reply.degradations[0].message


@pytest.mark.rpc(SEARCH)
async def test_search_fails_open_when_embedding_is_unreachable(
    running, tenant, pg_url, telemetry_sink, unused_tcp_port
):
    """HYBRID answers from full text alone (mode SPARSE, degraded); DENSE has no hits."""
    await ingest(running.stub, tenant, DOCS)
    cut_off = await start_retrieval(
        pg_url, f"127.0.0.1:{unused_tcp_port}", telemetry_sink().telemetry
    )
    try:
        hybrid = await cut_off.stub.Search(pb.SearchRequest(tenant_id=tenant, query="renewal"))
        assert hybrid.degraded and hybrid.mode == pb.SEARCH_MODE_SPARSE
        assert hybrid.hits[0].document_id == "renewal"
        assert all(h.sparse_rank and not h.dense_rank for h in hybrid.hits)
        assert [(d.reason, d.component) for d in hybrid.degradations] == [
            (common_pb2.DEGRADATION_REASON_EMBEDDING_UNAVAILABLE, "embedding")
        ]
        dense = await cut_off.stub.Search(
            pb.SearchRequest(tenant_id=tenant, query="renewal", mode=pb.SEARCH_MODE_DENSE)
        )
        assert dense.degraded and not dense.hits and dense.mode == pb.SEARCH_MODE_DENSE
        assert dense.degradations[0].reason == common_pb2.DEGRADATION_REASON_EMBEDDING_UNAVAILABLE
    finally:
        await cut_off.close()


class _LengthReranker:
    """A plain fake of our Reranker seam: prefers shorter passages."""

    name = "fake/length"

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [-float(len(p)) for p in passages]


@pytest.mark.rpc(SEARCH)
async def test_rerank_degrades_without_a_reranker_and_reorders_with_one(
    running, tenant, pg_url, embedding, telemetry_sink
):
    await ingest(running.stub, tenant, DOCS)
    request = pb.SearchRequest(tenant_id=tenant, query="renewal discount", rerank=True)
    plain = await running.stub.Search(request)
    assert plain.degraded and not plain.reranked and plain.hits
    assert plain.degradations[0].reason == common_pb2.DEGRADATION_REASON_RERANKER_UNAVAILABLE
    assert plain.hits[0].document_id == "renewal"
    with_reranker = await start_retrieval(
        pg_url,
        embedding.server.address,
        telemetry_sink().telemetry,
        reranker=_LengthReranker(),
        settings=RetrievalSettings(embedding_addr=embedding.server.address, rerank_weight=1.0),
    )
    try:
        reranked = await with_reranker.stub.Search(request)
    finally:
        await with_reranker.close()
    assert reranked.reranked and not reranked.degraded
    lengths = [len(h.text) for h in reranked.hits]
    assert lengths == sorted(lengths)
    assert all(h.HasField("rerank_score") for h in reranked.hits)
    assert reranked.hits[0].score == 1.0
    assert "rerank" in {t.stage for t in reranked.timings}
