"""The demo documents: deterministic, consistent with the warehouse CRM, and carrying the
planted secrets and injection payloads the demo relies on."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal

import pytest

from services.demo import (
    ACCOUNT_BRIEF,
    CALL_NOTE,
    REVIEW_PHRASE,
    DemoCorpus,
    compound_answer,
    generate_documents,
    to_document_input,
)
from services.retrieval._chunking import chunk_text, normalise
from services.retrieval._redact import Redactor
from services.retrieval._types import ContentType
from services.router._guard import scan
from services.sql.demo import data as demo_data
from tandem.v1 import retrieval_service_pb2 as pb


@pytest.fixture(scope="module")
def corpus() -> DemoCorpus:
    return generate_documents()


def _warehouse_open_pipeline(data: demo_data.DemoData) -> dict[int, Decimal]:
    # Written the way the SQL golden set defines open pipeline, independently of the
    # generator's helper.
    totals: dict[int, Decimal] = defaultdict(Decimal)
    for opp in data.opportunities:
        if opp.stage not in ("Closed Won", "Closed Lost"):
            totals[opp.company_id] += opp.amount
    return totals


def _in_review(data: demo_data.DemoData) -> set[int]:
    suite = next(p.product_id for p in data.products if p.name == "Security Suite")
    return {
        o.company_id
        for o in data.opportunities
        if o.product_id == suite and o.stage in ("Proposal", "Negotiation")
    }


def test_same_seed_gives_identical_documents_and_another_seed_does_not(corpus):
    again = generate_documents()
    assert again.documents == corpus.documents
    assert [d.text for d in again.documents] == [d.text for d in corpus.documents]
    other = generate_documents(seed=7)
    assert {d.text for d in other.documents}.isdisjoint(
        d.text for d in corpus.documents if d.category == CALL_NOTE
    )


def test_the_corpus_is_modest_and_has_every_kind(corpus):
    counts = corpus.counts
    assert counts[ACCOUNT_BRIEF] == 60
    assert 55 <= counts[CALL_NOTE] <= 62
    assert counts["product_sheet"] == 8 and counts["policy"] == 5
    assert len(corpus.documents) < 200
    assert sum(len(d.text) for d in corpus.documents) < 400_000
    assert len({d.document_id for d in corpus.documents}) == len(corpus.documents)


def test_every_document_is_sectioned_markdown_with_category_and_metadata(corpus):
    for doc in corpus.documents:
        assert doc.text.startswith("# ") and "\n## " in doc.text, doc.document_id
        assert doc.category and doc.metadata["kind"] == doc.category
        assert doc.metadata["source"] == "tandem-demo"
        assert doc.metadata["demo_seed"] == demo_data.DEFAULT_SEED
        if doc.company_id is not None:
            assert doc.metadata["company_id"] == doc.company_id
        chunks = chunk_text(normalise(doc.text), ContentType.MARKDOWN)
        assert chunks and all(c.section for c in chunks), doc.document_id


def test_size_knob_covers_the_top_accounts_first(corpus):
    small = generate_documents(accounts=20)
    top20 = sorted(
        (c for c in corpus.data.companies if c.deleted_at is None),
        key=lambda c: -_warehouse_open_pipeline(corpus.data).get(c.company_id, Decimal()),
    )[:20]
    assert set(small.covered_company_ids) == {c.company_id for c in top20}
    assert small.counts[ACCOUNT_BRIEF] == 20
    assert set(small.covered_company_ids) < set(corpus.covered_company_ids)
    assert len(generate_documents(accounts=300).covered_company_ids) == 300
    with pytest.raises(ValueError, match="accounts"):
        generate_documents(accounts=3)


def test_compound_question_ground_truth_matches_the_warehouse_and_the_documents(corpus):
    totals = _warehouse_open_pipeline(corpus.data)
    active = {c.company_id: c for c in corpus.data.companies if c.deleted_at is None}
    top5 = sorted(active, key=lambda cid: -totals.get(cid, Decimal()))[:5]
    names = [active[cid].name for cid in top5]
    notes = {d.company_id: d.text.lower() for d in corpus.documents if d.category == CALL_NOTE}
    mentioning = [active[cid].name for cid in top5 if REVIEW_PHRASE in notes.get(cid, "")]

    answer = compound_answer(corpus)
    assert [name for name, _ in answer.top] == names
    assert [amount for _, amount in answer.top] == [totals[cid] for cid in top5]
    assert list(answer.mentioning) == mentioning
    # The demo needs a real split: some of the top five do, some do not.
    assert answer.mentioning == ("Larkspur Industries", "Monarch Care", "Lakeside Council")
    assert answer.not_mentioning == ("Tidewater Department", "Riverstone Studios")
    assert names == [
        "Larkspur Industries",
        "Monarch Care",
        "Tidewater Department",
        "Lakeside Council",
        "Riverstone Studios",
    ]


def test_security_review_mentions_follow_the_crm_and_appear_only_in_call_notes(corpus):
    in_review = _in_review(corpus.data)
    for doc in corpus.documents:
        mentions = REVIEW_PHRASE in doc.text.lower()
        if doc.category == CALL_NOTE and not doc.injections:
            assert mentions == (doc.company_id in in_review), doc.document_id
        else:
            assert not mentions, doc.document_id


def test_briefs_state_the_open_pipeline_the_warehouse_holds(corpus):
    totals = _warehouse_open_pipeline(corpus.data)
    for doc in corpus.documents:
        if doc.category == ACCOUNT_BRIEF and doc.company_id in totals:
            assert f"worth ${totals[doc.company_id]:,.0f}:" in doc.text, doc.document_id


def test_planted_secrets_are_present_and_the_retrieval_redactor_removes_them(corpus):
    carriers = [d for d in corpus.documents if d.planted_secrets]
    assert len(carriers) >= 3
    secrets = [s for d in carriers for s in d.planted_secrets]
    assert any(s.startswith("AKIA") for s in secrets)
    assert any(s.startswith("ghp_") for s in secrets)
    redactor = Redactor()
    kinds: set[str] = set()
    for doc in carriers:
        for field in (doc.title, doc.uri, json.dumps(dict(doc.metadata))):
            assert not any(secret in field for secret in doc.planted_secrets)
        assert all(secret in doc.text for secret in doc.planted_secrets)
        redacted = redactor.redact(normalise(doc.text))
        leaked = [s for s in doc.planted_secrets if s in redacted.text]
        assert not leaked, doc.document_id
        kinds |= {kind.name for kind in redacted.counts}
    assert {"API_KEY", "LABELED_SECRET", "CONNECTION_STRING", "PRIVATE_KEY"} <= kinds


def test_injection_payloads_of_every_kind_are_planted(corpus):
    carriers = [d for d in corpus.documents if d.injections]
    kinds = {k for d in carriers for k in d.injections}
    assert kinds == {"override", "role_tag", "exfiltration_link", "sql_instruction"}
    text = "\n".join(d.text for d in carriers)
    assert "ignore all previous instructions" in text.lower()
    assert "<|im_start|>system" in text and "<system>" in text
    assert "![status badge](https://exfil.example/" in text
    assert "DROP TABLE activities" in text
    top5 = {c.company_id for c in corpus.data.companies if c.name in _top5_names(corpus)}
    assert all(d.company_id not in top5 for d in carriers)
    # The redactor leaves the payloads alone: guarding against them is the router's job.
    redacted = Redactor().redact(normalise(text)).text
    assert "https://exfil.example/collect.png" in redacted


def test_the_routers_injection_scan_flags_every_planted_payload_and_nothing_else(corpus):
    """Each chunk the retrieval service would store goes through the router's scan: planted
    payloads are HIGH findings (quarantined), ordinary documents raise none."""
    redactor = Redactor()
    for doc in corpus.documents:
        text = redactor.redact(normalise(doc.text)).text
        findings = [f for c in chunk_text(text, ContentType.MARKDOWN) for f in scan(c.text)]
        if doc.injections:
            assert any(f.severity == "HIGH" for f in findings), doc.document_id
        else:
            assert not findings, (doc.document_id, findings)


def _top5_names(corpus: DemoCorpus) -> set[str]:
    return {name for name, _ in compound_answer(corpus).top}


def test_documents_convert_to_the_retrieval_contract(corpus):
    doc = next(d for d in corpus.documents if d.category == CALL_NOTE)
    message = to_document_input(doc)
    assert message.document_id == doc.document_id and message.category == CALL_NOTE
    assert message.content_type == pb.CONTENT_TYPE_MARKDOWN
    assert message.metadata["company_id"] == doc.company_id
    assert message.metadata["kind"] == CALL_NOTE
    assert message.text == doc.text
