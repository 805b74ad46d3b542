"""The demo corpus loaded into a real retrieval stack: everything ingested, searchable,
the fake secrets stored nowhere, and a second load writing nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import psycopg
import pytest
from google.protobuf import struct_pb2

from services.demo import (
    CALL_NOTE,
    COMPOUND_QUESTION,
    REVIEW_PHRASE,
    check_demo_documents,
    companies_mentioning,
    compound_answer,
    demo_documents_loaded,
    load_demo_documents,
)
from services.demo._cli import main
from tandem.v1 import retrieval_service_pb2 as pb
from tests.integration.demo.conftest import LoadedDemo
from tests.integration.retrieval.stack import new_tenant

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


# Every stored chunk with its document's content hash and update time: a load that writes
# nothing leaves this identical.
_STORED = (
    "SELECT c.chunk_id::text, d.content_sha256, d.update_time FROM retrieval_chunks c "
    "JOIN retrieval_documents d USING (tenant_id, document_id) WHERE tenant_id = %s "
    "ORDER BY c.chunk_id"
)


def _company_id(hit: pb.SearchHit) -> int:
    return int(hit.metadata.fields["company_id"].number_value)


def _rows(pg_url: str, statement: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    with psycopg.connect(pg_url) as conn:
        return conn.execute(statement, params).fetchall()


async def test_every_document_is_ingested_with_its_secrets_redacted(loaded_demo: LoadedDemo):
    report = loaded_demo.first_load
    assert report.documents == len(loaded_demo.corpus.documents)
    assert report.included == report.documents and report.failed == 0, report.failures
    assert report.chunks_written == report.chunks_total > report.documents
    for kind in ("API_KEY", "LABELED_SECRET", "CONNECTION_STRING", "PRIVATE_KEY"):
        assert report.redactions.get(kind, 0) >= 1, kind
    print(
        f"\ndemo corpus: {report.documents} documents, {report.chunks_written} chunks, "
        f"loaded in {loaded_demo.load_seconds:.1f} s"
    )


async def test_a_second_load_writes_nothing_and_status_reports_loaded(
    loaded_demo: LoadedDemo, pg_url: str
):
    stub, tenant, docs = (
        loaded_demo.retrieval.stub,
        loaded_demo.tenant,
        loaded_demo.corpus.documents,
    )
    before = _rows(
        pg_url,
        _STORED,
        (tenant,),
    )
    assert await demo_documents_loaded(stub, tenant, documents=docs)

    again = await load_demo_documents(stub, tenant, documents=docs)

    assert again.unchanged == len(docs) and again.wrote_nothing
    assert set(again.outcomes.values()) == {"UNCHANGED"}
    after = _rows(
        pg_url,
        _STORED,
        (tenant,),
    )
    assert after == before and len(before) == loaded_demo.first_load.chunks_written


async def test_status_reports_missing_and_changed_documents(loaded_demo: LoadedDemo, pg_url: str):
    stub, docs = loaded_demo.retrieval.stub, loaded_demo.corpus.documents
    empty_tenant = new_tenant(pg_url, "demo-empty")
    assert not await demo_documents_loaded(stub, empty_tenant, documents=docs[:5])
    check = await check_demo_documents(stub, empty_tenant, documents=docs[:5])
    assert check.dry_run and check.included == 5 and check.chunks_written == 0
    assert _rows(
        pg_url, "SELECT count(*) FROM retrieval_documents WHERE tenant_id = %s", (empty_tenant,)
    ) == [(0,)]
    changed = dataclasses.replace(docs[0], text=docs[0].text + "\nOne more line.\n")
    assert not await demo_documents_loaded(
        stub, loaded_demo.tenant, documents=[changed, *docs[1:3]]
    )
    check = await check_demo_documents(stub, loaded_demo.tenant, documents=[changed, *docs[1:3]])
    assert check.outcomes == {
        changed.document_id: "INCLUDED",
        docs[1].document_id: "UNCHANGED",
        docs[2].document_id: "UNCHANGED",
    }


async def test_security_review_search_finds_the_call_notes_of_the_expected_accounts(
    loaded_demo: LoadedDemo,
):
    corpus, stub, tenant = loaded_demo.corpus, loaded_demo.retrieval.stub, loaded_demo.tenant
    expected = companies_mentioning(corpus.documents, REVIEW_PHRASE, CALL_NOTE)
    assert len(expected) >= 5

    reply = await stub.Search(
        pb.SearchRequest(
            tenant_id=tenant,
            query=REVIEW_PHRASE,
            top_k=30,
            filter=pb.SearchFilter(categories=[CALL_NOTE]),
        )
    )

    assert not reply.degraded
    # Hits are chunks: the phrase-bearing chunks of every expected account rank within the
    # first two per account, ahead of chunks that only share a word with the query.
    leading = reply.hits[: 2 * len(expected)]
    mentioning = {_company_id(h) for h in leading if REVIEW_PHRASE in h.text.lower()}
    assert mentioning == expected
    # The dense side is an approximate (HNSW) scan, so a chunk that only shares "security"
    # may slip between phrase-bearing ones; the best hit always carries the phrase.
    assert REVIEW_PHRASE in reply.hits[0].text.lower()
    assert [h.category for h in reply.hits] == [CALL_NOTE] * len(reply.hits)


async def test_the_compound_question_has_its_answer_in_the_top_accounts_call_notes(
    loaded_demo: LoadedDemo,
):
    """The document half of COMPOUND_QUESTION: among the call notes of the top five
    accounts (the SQL half), the ones that mention a security review rank first."""
    corpus, stub, tenant = loaded_demo.corpus, loaded_demo.retrieval.stub, loaded_demo.tenant
    answer = compound_answer(corpus)
    assert "top 5 accounts by open pipeline" in COMPOUND_QUESTION
    top_names = {name for name, _ in answer.top}
    notes = [d for d in corpus.documents if d.category == CALL_NOTE and not d.injections]
    top_ids = [d.document_id for d in notes if d.metadata["company"] in top_names]
    assert len(top_ids) == 5

    reply = await stub.Search(
        pb.SearchRequest(
            tenant_id=tenant,
            query=REVIEW_PHRASE,
            top_k=10,
            filter=pb.SearchFilter(document_ids=top_ids),
        )
    )

    # A company's call notes may hold the phrase in more than one chunk, and the dense
    # side is approximate: compare the companies whose passages carry the phrase.
    found = {hit.metadata["company"] for hit in reply.hits if REVIEW_PHRASE in hit.text.lower()}
    assert found == set(answer.mentioning)
    assert REVIEW_PHRASE in reply.hits[0].text.lower()


async def test_metadata_filters_reach_one_account(loaded_demo: LoadedDemo):
    corpus, stub, tenant = loaded_demo.corpus, loaded_demo.retrieval.stub, loaded_demo.tenant
    company_id = corpus.covered_company_ids[0]
    metadata = struct_pb2.Struct()
    metadata.update({"company_id": company_id})
    reply = await stub.Search(
        pb.SearchRequest(
            tenant_id=tenant,
            query="open deals and contacts",
            top_k=20,
            filter=pb.SearchFilter(metadata=metadata),
        )
    )
    assert reply.hits
    assert {_company_id(h) for h in reply.hits} == {company_id}


async def test_the_fake_secrets_are_stored_nowhere(loaded_demo: LoadedDemo, pg_url: str):
    secrets = [s for d in loaded_demo.corpus.documents for s in d.planted_secrets]
    assert len(secrets) >= 8
    tables = _rows(
        pg_url,
        "SELECT table_name FROM information_schema.columns "
        "WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY table_name",
        (),
    )
    names = [name for (name,) in tables]
    assert {"retrieval_documents", "retrieval_chunks"} <= set(names)
    stored = 0
    with psycopg.connect(pg_url) as conn:
        for name in names:
            rows = conn.execute(
                psycopg.sql.SQL("SELECT t::text FROM {} t WHERE tenant_id = %s").format(
                    psycopg.sql.Identifier(name)
                ),
                (loaded_demo.tenant,),
            ).fetchall()
            stored += len(rows)
            for (row,) in rows:
                leaked = [s for s in secrets if s in row]
                assert not leaked, name
    assert stored > len(loaded_demo.corpus.documents)
    runbook = next(
        d for d in loaded_demo.corpus.documents if d.document_id.startswith("demo-runbook")
    )
    bodies = " ".join(
        body
        for (body,) in _rows(
            pg_url,
            "SELECT body FROM retrieval_chunks WHERE tenant_id = %s AND document_id = %s",
            (loaded_demo.tenant, runbook.document_id),
        )
    )
    assert "[API_KEY]" in bodies and "password: [LABELED_SECRET]" in bodies
    assert "postgresql://[CONNECTION_STRING]@sync-db" in bodies


async def test_injection_payloads_are_stored_for_the_router_to_guard(loaded_demo: LoadedDemo):
    stub, tenant = loaded_demo.retrieval.stub, loaded_demo.tenant
    survey = next(d for d in loaded_demo.corpus.documents if "exfiltration_link" in d.injections)
    reply = await stub.GetDocument(
        pb.GetDocumentRequest(tenant_id=tenant, document_id=survey.document_id, include_chunks=True)
    )
    assert any("https://exfil.example/collect.png" in c.text for c in reply.chunks)


async def test_the_command_line_loads_then_reports_loaded(
    loaded_demo: LoadedDemo,
    pg_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    # The in-process retrieval server here is plaintext (the development switch); under
    # `tandem run` the command reads the certificates it issued (tests/e2e/test_run.py).
    monkeypatch.setenv("TANDEM_INSECURE_INTERNAL", "true")
    tenant = new_tenant(pg_url, "demo-cli")
    addr = loaded_demo.retrieval.server.address
    common = ["--addr", addr, "--tenant", tenant, "--accounts", "12"]

    assert await asyncio.to_thread(main, ["status", *common]) == 1
    assert await asyncio.to_thread(main, ["load", *common]) == 0
    assert await asyncio.to_thread(main, ["status", *common]) == 0
    assert await asyncio.to_thread(main, ["load", "--json", *common]) == 0

    out = capsys.readouterr().out
    assert "not loaded" in out and "stored unchanged" in out
    report = json.loads(out[out.index("{") :])
    assert report["included"] == 0 and report["chunks_written"] == 0
    assert report["unchanged"] == report["documents"] > 12
