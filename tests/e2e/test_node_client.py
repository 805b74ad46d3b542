"""The second, independent client: Node.js (@grpc/grpc-js + @grpc/proto-loader) loads the
protos as shipped and calls the gateway, proving a non-Python backend can use the contract.

The first test needs no server; the others run the Node client as its own process against
the shared process stack (tests/processes.py: each service its own process), with the demo
documents loaded for the Node client's own tenant."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services.demo import (
    CALL_NOTE,
    COMPOUND_QUESTION,
    REVIEW_PHRASE,
    DemoCorpus,
    companies_mentioning,
    compound_answer,
    generate_documents,
)
from tests.processes import ProcessStack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TENANT = "e2e-node"


@dataclass(frozen=True)
class Gateway:
    """The shared process stack's gateway, with the demo corpus loaded for one tenant."""

    address: str
    api_key: str
    corpus: DemoCorpus


@pytest.fixture(scope="module")
def gateway(process_stack: ProcessStack) -> Gateway:
    corpus = generate_documents()
    report = process_stack.load_demo_documents(TENANT, corpus.documents)
    assert report.failed == 0, report.failures
    return Gateway(process_stack.gateway_address, process_stack.create_key(TENANT), corpus)


def _node() -> str:
    node = shutil.which("node")
    assert node is not None
    return node


def test_node_client_loads_the_protos_and_speaks_the_contract(node_client: Path):
    """The Node-side tests: every GatewayService RPC exists, requests carry no tenant, and
    calls send `authorization: Bearer <key>` and decode replies (against a Node server
    built from the same protos)."""
    result = subprocess.run(
        [_node(), "--test", "test/"],
        cwd=node_client,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout and "# pass 4" in result.stdout


def _client(
    node_dir: Path, gateway: Gateway, api_key: str, *args: str
) -> tuple[int, dict[str, Any]]:
    """Run ``node client.js ARGS`` against the stack's gateway; its one JSON line."""
    env = {
        **os.environ,
        "TANDEM_GATEWAY_ADDR": gateway.address,
        "TANDEM_API_KEY": api_key,
        "TANDEM_DEADLINE_S": "60",
    }
    result = subprocess.run(
        [_node(), "client.js", *args],
        cwd=node_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr
    reply: dict[str, Any] = json.loads(lines[-1])
    return result.returncode, reply


def test_node_search_finds_the_security_review_call_notes(node_client: Path, gateway: Gateway):
    code, reply = _client(
        node_client, gateway, gateway.api_key, "search", REVIEW_PHRASE, "--top-k", "20"
    )

    assert code == 0, reply
    assert reply["degraded"] is False and reply["mode"] == "SEARCH_MODE_HYBRID"
    hits = reply["hits"]
    assert 0 < len(hits) <= 20
    expected = companies_mentioning(gateway.corpus.documents, REVIEW_PHRASE, CALL_NOTE)
    # Metadata arrives as plain JSON: the client unpacks google.protobuf.Struct.
    found = {
        int(hit["metadata"]["company_id"])
        for hit in hits
        if hit["category"] == CALL_NOTE and REVIEW_PHRASE in hit["text"].lower()
    }
    assert found == expected
    assert all(hit["document_id"].startswith("demo-") for hit in hits)


def test_node_ask_gets_a_cited_answer_with_its_guardrail_report(
    node_client: Path, gateway: Gateway
):
    code, reply = _client(
        node_client,
        gateway,
        gateway.api_key,
        "ask",
        "Who approves discounts above 20% in our pricing policy?",
    )

    assert code == 0, reply
    answer = reply["answer"]
    assert answer["outcome"] == "ANSWER_OUTCOME_ANSWERED" and answer["text"].strip()
    assert answer["request_id"] and answer["timings"]
    cited = {
        (c["document_id"], c["section"])
        for c in answer["citations"]
        if c["kind"] == "CITATION_KIND_PASSAGE"
    }
    assert ("demo-policy-pricing", "Discount approval") in cited
    planted = {d.document_id for d in gateway.corpus.documents if d.injections}
    assert not {document_id for document_id, _ in cited} & planted
    report = answer["guardrail_report"]
    assert "GUARDRAIL_LAYER_INJECTION_SCAN" in report["enabled_layers"]
    assert all(
        f["quarantined"] for f in report["injection_findings"] if f["document_id"] in planted
    )


def test_node_ask_answers_the_compound_question_with_both_engines(
    node_client: Path, gateway: Gateway
):
    code, reply = _client(node_client, gateway, gateway.api_key, "ask", COMPOUND_QUESTION)

    assert code == 0, reply
    answer = reply["answer"]
    assert answer["text"].strip() and answer["citations"]
    # SQL results and their cells decode (int64 as strings, oneof members named).
    for step in answer["sql_results"]:
        assert step["result"]["sql"].startswith("SELECT")
        assert all(v["kind"] for row in step["result"]["rows"] for v in row["values"])
    known = {doc.document_id for doc in gateway.corpus.documents}
    passages = {
        c["document_id"] for c in answer["citations"] if c["kind"] == "CITATION_KIND_PASSAGE"
    }
    assert passages and passages <= known
    # Both engines answered: the top five from SQL, the mentions from their call notes,
    # which are the only call notes cited.
    truth = compound_answer(gateway.corpus)
    top = [name for name, _ in truth.top]
    assert all(name in answer["text"] for name in top), answer["text"]
    notes = {
        d.document_id: d.metadata["company"]
        for d in gateway.corpus.documents
        if d.category == CALL_NOTE and not d.injections
    }
    assert {notes[d] for d in passages if d in notes} <= set(top)
    # The headline answer: exactly the top accounts whose call notes mention the review.
    sentences = re.split(r"(?<=[.!?])(?:\s*\[\d+\])*\s+", answer["text"])
    (says,) = [s for s in sentences if s.startswith(f"Of these {len(top)},")]
    assert {n for n in top if n in says} == set(truth.mentioning)
    assert {c["kind"] for c in answer["citations"]} == {
        "CITATION_KIND_PASSAGE",
        "CITATION_KIND_SQL_RESULT",
    }


def test_node_without_a_valid_key_is_unauthenticated(node_client: Path, gateway: Gateway):
    code, reply = _client(node_client, gateway, "", "search", "pricing policy")
    assert code == 1 and reply["error"]["status"] == "UNAUTHENTICATED"
    code, reply = _client(node_client, gateway, "tdm_not_a_real_key", "ask", "hello there")
    assert code == 1 and reply["error"]["status"] == "UNAUTHENTICATED"
