"""Issue 47, item 2, from the attacker's side: document ACLs on the real retrieval service
over the real embedded Postgres, principals sent as headers (plaintext, as the router and
the gateway forward them).

Three principals — alice (group sales), bob (group hr), carol (no group) — and four
documents: public, sales-only, hr-only and alice-only. Through every RetrievalService RPC
nothing a principal may not read appears: no id, title, snippet or count, in any search
mode; a forbidden document answers exactly as a missing one; revoking a right takes
effect for the next call; and the database itself fails closed (a transaction that sets
no reader sees no restricted chunk).
"""

from __future__ import annotations

from typing import Any

import grpc
import psycopg
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from services.common import Principal
from services.retrieval._repository import app_conninfo
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.retrieval.stack import ingest, new_tenant

pytestmark = pytest.mark.integration

MODES = [pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_DENSE, pb.SEARCH_MODE_SPARSE]
# Each document holds the shared words and one secret word of its own.
SECRETS = {
    "public": "marmalade",
    "sales-only": "zeppelin",
    "hr-only": "quokka",
    "alice-only": "obsidian",
}
ACLS = {
    "public": None,
    "sales-only": pb.DocumentAcl(groups=["sales"]),
    "hr-only": pb.DocumentAcl(groups=["hr"]),
    "alice-only": pb.DocumentAcl(principals=["alice"]),
}
PRINCIPALS = {
    "alice": Principal.of("alice", ["sales"]),
    "bob": Principal.of("bob", ["hr"]),
    "carol": Principal.of("carol"),
}
READS = {
    "alice": {"public", "sales-only", "alice-only"},
    "bob": {"public", "hr-only"},
    "carol": {"public"},
}
SHARED_QUERY = "quarterly bonus policy"


def _document(document_id: str) -> pb.DocumentInput:
    secret = SECRETS[document_id]
    doc = pb.DocumentInput(
        document_id=document_id,
        title=f"Bonus policy {secret}",
        text=f"The quarterly bonus policy for {secret} is reviewed every quarter.",
    )
    acl = ACLS[document_id]
    if acl is not None:
        doc.acl.CopyFrom(acl)
    return doc


def _as(name: str) -> tuple[tuple[str, str], ...]:
    return PRINCIPALS[name].headers()


def _forbidden(name: str) -> set[str]:
    return set(SECRETS) - READS[name]


def _leaks(name: str, texts: list[str]) -> list[str]:
    """Secret words of documents ``name`` may not read, found in ``texts``."""
    words = {SECRETS[d] for d in _forbidden(name)}
    return sorted(w for w in words for t in texts if w in t.lower())


async def _failure(call: Any) -> tuple[grpc.StatusCode, str, str, str]:
    """(code, message, reason, metadata) of a failed unary call."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    status = await rpc_status.aio.from_call(call)
    info = error_details_pb2.ErrorInfo()
    for detail in status.details if status else []:
        if detail.Is(info.DESCRIPTOR):
            detail.Unpack(info)
    metadata = sorted((k, v) for k, v in info.metadata.items() if k != "document_id")
    return err.value.code(), err.value.details() or "", info.reason, str(metadata)


@pytest.fixture
async def shared(retrieval, pg_url) -> str:
    tenant = new_tenant(pg_url, "acl")
    _, summary = await ingest(retrieval.stub, tenant, [_document(d) for d in SECRETS])
    assert summary.documents_included == len(SECRETS)
    return tenant


async def test_search_returns_only_readable_documents_in_every_mode(retrieval, shared):
    for name in PRINCIPALS:
        for mode in MODES:
            for query in [SHARED_QUERY, *(f"bonus {w}" for w in SECRETS.values())]:
                reply = await retrieval.stub.Search(
                    pb.SearchRequest(tenant_id=shared, query=query, mode=mode, top_k=20),
                    metadata=_as(name),
                )
                ids = {h.document_id for h in reply.hits}
                assert ids <= READS[name], (name, mode, query, ids)
                texts = [f"{h.title} {h.text} {h.section} {h.uri}" for h in reply.hits]
                assert not _leaks(name, texts), (name, mode, query)
            shared_reply = await retrieval.stub.Search(
                pb.SearchRequest(tenant_id=shared, query=SHARED_QUERY, mode=mode, top_k=20),
                metadata=_as(name),
            )
            # Every readable document is still found: the filter hides, it does not starve.
            assert {h.document_id for h in shared_reply.hits} == READS[name], (name, mode)
    full = await retrieval.stub.Search(
        pb.SearchRequest(tenant_id=shared, query=SHARED_QUERY, top_k=20)
    )
    assert {h.document_id for h in full.hits} == set(SECRETS), "a service key sees everything"


async def test_hidden_chunks_take_no_rank_and_no_slot(retrieval, shared):
    """A forbidden chunk that would rank first neither takes the one slot of top_k=1 (a
    short page would count it) nor pushes the visible hit to rank 2 (ranks are shown)."""
    for name in PRINCIPALS:
        for document_id in _forbidden(name):
            query = f"bonus {SECRETS[document_id]}"
            for mode, rank in (
                (pb.SEARCH_MODE_DENSE, "dense_rank"),
                (pb.SEARCH_MODE_SPARSE, "sparse_rank"),
            ):
                reply = await retrieval.stub.Search(
                    pb.SearchRequest(tenant_id=shared, query=query, mode=mode, top_k=1),
                    metadata=_as(name),
                )
                assert len(reply.hits) == 1, (name, query, mode)
                assert getattr(reply.hits[0], rank) == 1, (name, query, mode)


async def test_a_document_filter_naming_a_forbidden_id_finds_nothing(retrieval, shared):
    reply = await retrieval.stub.Search(
        pb.SearchRequest(
            tenant_id=shared,
            query="bonus quokka",
            filter=pb.SearchFilter(document_ids=["hr-only"]),
            mode=pb.SEARCH_MODE_SPARSE,
        ),
        metadata=_as("carol"),
    )
    assert not reply.hits


async def test_get_list_and_delete_treat_forbidden_as_missing(retrieval, shared):
    stub = retrieval.stub
    for name in PRINCIPALS:
        listed = await stub.ListDocuments(
            pb.ListDocumentsRequest(tenant_id=shared, page_size=50), metadata=_as(name)
        )
        assert {d.document_id for d in listed.documents} == READS[name]
        assert not _leaks(name, [f"{d.title} {d.uri}" for d in listed.documents])
        for document_id in READS[name]:
            got = await stub.GetDocument(
                pb.GetDocumentRequest(
                    tenant_id=shared, document_id=document_id, include_chunks=True
                ),
                metadata=_as(name),
            )
            assert got.document.document_id == document_id
        missing = await _failure(
            stub.GetDocument(
                pb.GetDocumentRequest(tenant_id=shared, document_id="no-such-doc"),
                metadata=_as(name),
            )
        )
        assert missing[0] == grpc.StatusCode.NOT_FOUND
        for document_id in _forbidden(name):
            for call in (
                stub.GetDocument(
                    pb.GetDocumentRequest(
                        tenant_id=shared, document_id=document_id, include_chunks=True
                    ),
                    metadata=_as(name),
                ),
                stub.DeleteDocument(
                    pb.DeleteDocumentRequest(tenant_id=shared, document_id=document_id),
                    metadata=_as(name),
                ),
                stub.UpdateDocumentAcl(
                    pb.UpdateDocumentAclRequest(
                        tenant_id=shared,
                        document_id=document_id,
                        acl=pb.DocumentAcl(principals=[name]),
                    ),
                    metadata=_as(name),
                ),
            ):
                assert await _failure(call) == missing, (name, document_id)
            gone = await stub.DeleteDocument(
                pb.DeleteDocumentRequest(
                    tenant_id=shared, document_id=document_id, allow_missing=True
                ),
                metadata=_as(name),
            )
            assert (gone.deleted, gone.chunks_deleted) == (False, 0)
    # Nothing was deleted or re-permissioned by the attempts.
    everything = await stub.ListDocuments(pb.ListDocumentsRequest(tenant_id=shared))
    assert {
        d.document_id: list(d.acl.groups) + list(d.acl.principals) for d in everything.documents
    } == {
        "public": [],
        "sales-only": ["sales"],
        "hr-only": ["hr"],
        "alice-only": ["alice"],
    }


async def test_ingest_cannot_overwrite_or_probe_an_invisible_document(retrieval, shared, pg_url):
    stub = retrieval.stub
    before = await stub.GetDocument(pb.GetDocumentRequest(tenant_id=shared, document_id="hr-only"))
    hijack = pb.DocumentInput(document_id="hr-only", text="carol's replacement text")
    _, summary = await ingest(stub, shared, [hijack], metadata=_as("carol"))
    [result] = summary.documents
    assert result.outcome == pb.DOCUMENT_OUTCOME_FAILED
    assert result.error.code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert "hr" not in result.error.message.lower() and not result.replaced
    after = await stub.GetDocument(pb.GetDocumentRequest(tenant_id=shared, document_id="hr-only"))
    assert after.document.content_sha256 == before.document.content_sha256
    assert list(after.document.acl.groups) == ["hr"]
    # A dry run says nothing either: the id looks new (not "replaced", not UNCHANGED).
    _, dry = await ingest(stub, shared, [_document("hr-only")], dry_run=True, metadata=_as("carol"))
    assert dry.documents[0].outcome == pb.DOCUMENT_OUTCOME_FAILED  # its ACL shuts carol out
    _, dry = await ingest(stub, shared, [hijack], dry_run=True, metadata=_as("carol"))
    assert dry.documents[0].outcome == pb.DOCUMENT_OUTCOME_INCLUDED
    assert not dry.documents[0].replaced


async def test_ingest_validates_acls_and_refuses_to_lock_out_the_caller(retrieval, pg_url):
    tenant = new_tenant(pg_url, "acl")
    docs = [
        pb.DocumentInput(document_id="a", text="x", acl=pb.DocumentAcl(groups=["ok", ""])),
        pb.DocumentInput(document_id="b", text="x", acl=pb.DocumentAcl(principals=["p\x07"])),
        pb.DocumentInput(document_id="c", text="x", acl=pb.DocumentAcl(groups=["hr"])),
        pb.DocumentInput(document_id="d", text="sales notes", acl=pb.DocumentAcl(groups=["sales"])),
    ]
    _, summary = await ingest(retrieval.stub, tenant, docs, metadata=_as("alice"))
    fields = [[v.field for v in d.error.field_violations] for d in summary.documents]
    assert fields == [
        ["documents[0].acl.groups[1]"],
        ["documents[1].acl.principals[0]"],
        ["documents[2].acl"],
        [],
    ]
    assert summary.documents[3].outcome == pb.DOCUMENT_OUTCOME_INCLUDED


async def test_revoking_a_right_takes_effect_for_the_next_search(retrieval, shared):
    stub = retrieval.stub

    async def carol_sees() -> set[str]:
        reply = await stub.Search(
            pb.SearchRequest(tenant_id=shared, query="bonus obsidian", top_k=20),
            metadata=_as("carol"),
        )
        return {h.document_id for h in reply.hits}

    assert "alice-only" not in await carol_sees()
    await stub.UpdateDocumentAcl(
        pb.UpdateDocumentAclRequest(
            tenant_id=shared,
            document_id="alice-only",
            acl=pb.DocumentAcl(principals=["alice", "carol"]),
        ),
        metadata=_as("alice"),
    )
    assert "alice-only" in await carol_sees()
    await stub.UpdateDocumentAcl(
        pb.UpdateDocumentAclRequest(
            tenant_id=shared, document_id="alice-only", acl=pb.DocumentAcl(principals=["alice"])
        ),
        metadata=_as("alice"),
    )
    assert "alice-only" not in await carol_sees()
    # No re-embedding: the chunk ids (derived from the content) are the same ones.
    got = await stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=shared, document_id="alice-only", include_chunks=True)
    )
    assert got.document.chunk_count == len(got.chunks) >= 1


async def test_the_database_fails_closed_without_a_reader(retrieval, shared, pg_url):
    """As the service's own role: the tenant set, no reader — only the public chunks."""
    count = "SELECT count(DISTINCT document_id) FROM retrieval_chunks"
    with psycopg.connect(app_conninfo(pg_url)) as app:
        app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (shared,))
        assert app.execute(count).fetchone() == (1,)
        assert app.execute("SELECT count(*) FROM retrieval_documents").fetchone() == (1,)
        app.rollback()
        # A principal with a group it does not hold spelled oddly still sees only its own.
        app.execute(
            "SELECT set_config('tandem.tenant_id', %s, true), "
            "set_config('tandem.principal', 'carol', true), "
            "set_config('tandem.groups', '{}', true), set_config('tandem.full_view', 'off', true)",
            (shared,),
        )
        assert app.execute(count).fetchone() == (1,)
        app.rollback()
        app.execute(
            "SELECT set_config('tandem.tenant_id', %s, true), "
            "set_config('tandem.full_view', 'on', true)",
            (shared,),
        )
        assert app.execute(count).fetchone() == (len(SECRETS),)
        app.rollback()
        # The full-text candidates run as the owner: they state the rule themselves.
        app.execute("SELECT set_config('tandem.tenant_id', %s, true)", (shared,))
        row = app.execute(
            "SELECT count(*) FROM retrieval_text_candidates("
            "plainto_tsquery('english', 'bonus'), NULL, NULL, NULL, NULL, NULL)"
        ).fetchone()
        assert row == (1,)
