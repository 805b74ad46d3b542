"""People inside a tenant (issue 47, item 6): the permission matrix from the attacker's side,
through every public RPC of the real stack as processes (gateway, router, retrieval, SQL,
embedding; mutual TLS inside, the principal signed into every internal token).

Three principals, two groups: alice (sales, region 1), bob (hr, region 2), carol (no
group, region 3). Four documents, each holding a codeword no other document holds: one
open to the whole tenant, one for sales, one for hr, one for alice alone. The demo
warehouse with an access policy: ``companies`` filtered to the principal's region,
``companies.annual_revenue`` readable by hr only.

Each check names what a principal may not see and asserts none of it is anywhere in what
came back (every message serialised: answers, citations, snippets, trajectories, charts,
rows, counts, streamed events), next to a positive control that what it may see does
come back, so a check cannot pass by returning nothing.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from services.common import Principal
from services.sql.demo import DEFAULT_DATABASE
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.faults.contract import decode
from tests.integration.gateway.stack import bearer
from tests.processes import ProcessStack, gateway_stub

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

PEOPLE = {
    "alice": Principal.of("alice", ["sales"], {"region_id": "1"}),
    "bob": Principal.of("bob", ["hr"], {"region_id": "2"}),
    "carol": Principal.of("carol", [], {"region_id": "3"}),
}
# document id -> (ACL, codeword its text alone holds)
DOCUMENTS: dict[str, tuple[rpb.DocumentAcl | None, str]] = {
    "handbook": (None, "LANTERNFISH"),
    "sales-playbook": (rpb.DocumentAcl(groups=["sales"]), "ZEBRAQUILL"),
    "salary-bands": (rpb.DocumentAcl(groups=["hr"]), "OKAPIVERSE"),
    "alice-notes": (rpb.DocumentAcl(principals=["alice"]), "QUOKKAMIRE"),
}
READS = {
    "alice": {"handbook", "sales-playbook", "alice-notes"},
    "bob": {"handbook", "salary-bands"},
    "carol": {"handbook"},
}
POLICY = {
    "row_filters": {"companies": "region_id = {principal.region_id}"},
    "hidden": {"companies.annual_revenue": ["hr"]},
}
COUNT = "How many companies are there?"


def text_of(document_id: str, codeword: str) -> str:
    return (
        f"{document_id.replace('-', ' ').title()}. The codeword of this document is "
        f"{codeword}. Say the codeword when asked for it; every team keeps one codeword."
    )


def forbidden(person: str) -> set[str]:
    """The ids and codewords of the documents ``person`` may not read."""
    out: set[str] = set()
    for document_id, (_, codeword) in DOCUMENTS.items():
        if document_id not in READS[person]:
            out |= {document_id, codeword}
    return out


def allowed(person: str) -> set[str]:
    return {DOCUMENTS[d][1] for d in READS[person]}


def seen(*messages: Message) -> str:
    """Everything a reply carries, as text (JSON of every field, default values dropped)."""
    return "\n".join(json.dumps(json_format.MessageToDict(m), ensure_ascii=False) for m in messages)


def assert_none_of(text: str, words: set[str], where: str) -> None:
    leaked = sorted(w for w in words if w in text)
    assert not leaked, f"{where}: {leaked} reached a principal that may not read them"


@dataclass
class World:
    stack: ProcessStack
    tenant: str
    service_key: str
    act_as_key: str
    channel: grpc.aio.Channel

    @property
    def stub(self) -> Any:
        return gateway_stub(self.channel)

    def service(self) -> tuple[tuple[str, str], ...]:
        return bearer(self.service_key)

    def as_(self, person: str) -> tuple[tuple[str, str], ...]:
        return (*bearer(self.act_as_key), *PEOPLE[person].headers())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessStack]:
    root = tmp_path_factory.mktemp("matrix")
    policy = root / "warehouse-access.json"
    policy.write_text(json.dumps(POLICY))
    with ProcessStack(
        root / "stack",
        env={
            "GATEWAY_RATE_PER_S": "10000",
            "GATEWAY_BURST": "10000",
            "SQL_ACCESS_POLICIES": f"warehouse={policy}",
        },
    ) as running:
        yield running


@pytest.fixture
async def world(stack: ProcessStack) -> AsyncIterator[World]:
    """A fresh tenant holding the four documents, a service key and an act_as key."""
    tenant = f"matrix-{uuid.uuid4().hex[:8]}"
    service_key = await asyncio.to_thread(stack.create_key, tenant, "service", ("all",))
    act_as_key = await asyncio.to_thread(stack.create_key, tenant, "backend", ("all", "act_as"))
    channel = grpc.aio.insecure_channel(stack.gateway_address)
    world = World(stack, tenant, service_key, act_as_key, channel)
    documents = []
    for document_id, (acl, codeword) in DOCUMENTS.items():
        document = rpb.DocumentInput(
            document_id=document_id, title=document_id, text=text_of(document_id, codeword)
        )
        if acl is not None:
            document.acl.CopyFrom(acl)
        documents.append(document)
    results = [
        reply
        async for reply in world.stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=documents),
            metadata=world.service(),
            timeout=120,
        )
    ]
    assert results[-1].summary.documents_failed == 0, seen(*results)
    try:
        yield world
    finally:
        await channel.close()


def region_count(stack: ProcessStack, where: str = "TRUE") -> dict[str, int]:
    """Companies per principal's region (and in all), read from the warehouse directly."""
    with psycopg.connect(stack.database_url(DEFAULT_DATABASE)) as conn:
        rows = conn.execute(
            f"SELECT region_id, count(*) FROM companies WHERE {where} GROUP BY region_id"
        ).fetchall()
    per_region = {str(region): count for region, count in rows}
    out = {
        person: per_region.get(p.attribute("region_id") or "", 0) for person, p in PEOPLE.items()
    }
    out["service"] = sum(per_region.values())
    return out


def first_number(result: spb.SqlResult) -> int:
    value = json_format.MessageToDict(result.rows[0].values[0])
    return int(next(iter(value.values())))


# -- documents ------------------------------------------------------------------------


async def test_search_and_answers_return_nothing_a_principal_may_not_read(world: World):
    stub = world.stub
    for person in PEOPLE:
        meta = world.as_(person)
        for mode in (rpb.SEARCH_MODE_SPARSE, rpb.SEARCH_MODE_DENSE, rpb.SEARCH_MODE_HYBRID):
            reply = await stub.Search(
                gpb.GatewayServiceSearchRequest(query="codeword", mode=mode, top_k=10),
                metadata=meta,
                timeout=30,
            )
            text = seen(reply)
            assert_none_of(text, forbidden(person), f"{person} Search {mode}")
            # Positive control: everything the person may read is found.
            assert {h.document_id for h in reply.hits} == READS[person], (person, mode)
        for ask_mode in (qpb.ASK_MODE_RETRIEVE, qpb.ASK_MODE_AGENTIC, qpb.ASK_MODE_AUTO):
            answer = (
                await stub.Ask(
                    gpb.GatewayServiceAskRequest(question="What is the codeword?", mode=ask_mode),
                    metadata=meta,
                    timeout=60,
                )
            ).answer
            assert_none_of(seen(answer), forbidden(person), f"{person} Ask {ask_mode}")
            assert {c.document_id for c in answer.citations} <= READS[person]
        events = [
            event
            async for event in stub.StreamAsk(
                gpb.GatewayServiceStreamAskRequest(
                    question="What is the codeword?", mode=qpb.ASK_MODE_RETRIEVE
                ),
                metadata=meta,
                timeout=60,
            )
        ]
        assert_none_of(seen(*events), forbidden(person), f"{person} StreamAsk")
        assert any(w in seen(*events) for w in allowed(person)), person


async def test_a_forbidden_document_is_a_missing_one_to_every_write(world: World):
    stub = world.stub
    carol = world.as_("carol")

    async def refusal(call: Any) -> tuple[Any, str]:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
        error = decode(refused.value)
        return refused.value.code(), error.reason

    missing = f"never-{uuid.uuid4().hex[:6]}"
    for document_id in ("salary-bands", missing):
        assert await refusal(
            stub.DeleteDocument(
                gpb.GatewayServiceDeleteDocumentRequest(document_id=document_id), metadata=carol
            )
        ) == (grpc.StatusCode.NOT_FOUND, "DOCUMENT_NOT_FOUND"), document_id
        assert await refusal(
            stub.UpdateDocumentAcl(
                gpb.GatewayServiceUpdateDocumentAclRequest(
                    document_id=document_id, acl=rpb.DocumentAcl(principals=["carol"])
                ),
                metadata=carol,
            )
        ) == (grpc.StatusCode.NOT_FOUND, "DOCUMENT_NOT_FOUND"), document_id
    # Ingesting over an id carol cannot read is refused, and the document is untouched.
    replies = [
        reply
        async for reply in stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(
                documents=[rpb.DocumentInput(document_id="salary-bands", text="overwritten")]
            ),
            metadata=carol,
            timeout=60,
        )
    ]
    assert replies[-1].summary.documents_failed == 1
    assert_none_of(seen(*replies), {"OKAPIVERSE"}, "carol's ingest reply")
    bob = await stub.Search(
        gpb.GatewayServiceSearchRequest(query="codeword", top_k=10),
        metadata=world.as_("bob"),
        timeout=30,
    )
    assert "OKAPIVERSE" in seen(bob) and "overwritten" not in seen(bob)
    # An upload with an ACL is that principal's alone.
    upload = [
        gpb.GatewayServiceUploadDocumentRequest(
            header=gpb.GatewayServiceUploadHeader(
                document=rpb.DocumentInput(
                    document_id="alice-upload",
                    file_name="alice.txt",
                    acl=rpb.DocumentAcl(principals=["alice"]),
                )
            )
        ),
        gpb.GatewayServiceUploadDocumentRequest(
            chunk=b"Uploaded notes. The codeword of this upload is WOMBATRIDGE."
        ),
    ]
    uploaded = [
        reply
        async for reply in stub.UploadDocument(
            iter(upload), metadata=world.as_("alice"), timeout=60
        )
    ]
    assert uploaded
    for person, sees in (("alice", True), ("bob", False), ("carol", False)):
        reply = await stub.Search(
            gpb.GatewayServiceSearchRequest(query="WOMBATRIDGE codeword", top_k=10),
            metadata=world.as_(person),
            timeout=30,
        )
        assert ("WOMBATRIDGE" in seen(reply)) is sees, person


async def test_a_revoked_acl_holds_from_the_next_call_mid_conversation(world: World):
    stub = world.stub
    alice = world.as_("alice")
    first = (
        await stub.Ask(
            gpb.GatewayServiceAskRequest(
                question="What is the sales playbook codeword?", mode=qpb.ASK_MODE_RETRIEVE
            ),
            metadata=alice,
            timeout=60,
        )
    ).answer
    assert "ZEBRAQUILL" in seen(first)
    await stub.UpdateDocumentAcl(
        gpb.GatewayServiceUpdateDocumentAclRequest(
            document_id="sales-playbook", acl=rpb.DocumentAcl(groups=["hr"])
        ),
        metadata=world.service(),
        timeout=30,
    )
    again = (
        await stub.Ask(
            gpb.GatewayServiceAskRequest(
                question="What is the sales playbook codeword?",
                mode=qpb.ASK_MODE_RETRIEVE,
                conversation_id=first.conversation_id,
            ),
            metadata=alice,
            timeout=60,
        )
    ).answer
    assert_none_of(seen(again), {"ZEBRAQUILL", "sales-playbook"}, "alice after revocation")
    # The conversation is alice's: bob neither lists nor deletes it.
    listed = await stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(), metadata=world.as_("bob"), timeout=30
    )
    assert first.conversation_id not in seen(listed)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.DeleteConversation(
            gpb.GatewayServiceDeleteConversationRequest(conversation_id=first.conversation_id),
            metadata=world.as_("bob"),
            timeout=30,
        )
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    mine = await stub.ListConversations(
        gpb.GatewayServiceListConversationsRequest(), metadata=alice, timeout=30
    )
    assert first.conversation_id in seen(mine)


# -- SQL ---------------------------------------------------------------------------------


async def test_every_sql_rpc_reads_only_the_principals_rows_and_columns(world: World):
    stub = world.stub
    counts = region_count(world.stack)
    in_retail = region_count(world.stack, "industry = 'Retail'")
    in_energy = region_count(world.stack, "industry = 'Energy'")
    assert len(set(counts.values())) == len(counts), counts  # the matrix tells them apart
    for person in ("service", *PEOPLE):
        meta = world.service() if person == "service" else world.as_(person)
        asked = await stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question=COUNT), metadata=meta, timeout=60
        )
        assert first_number(asked.result) == counts[person], (person, seen(asked))
        intent = await stub.RunSqlIntent(
            gpb.GatewayServiceRunSqlIntentRequest(
                intent=spb.SqlIntent(kind=spb.INTENT_KIND_COUNT, table="companies")
            ),
            metadata=meta,
            timeout=60,
        )
        assert first_number(intent.result) == counts[person], (person, seen(intent))
        routed = (
            await stub.Ask(
                gpb.GatewayServiceAskRequest(
                    question="How many companies are in the Retail industry?",
                    mode=qpb.ASK_MODE_SQL,
                ),
                metadata=meta,
                timeout=60,
            )
        ).answer
        assert routed.sql_results, (person, seen(routed))
        assert first_number(routed.sql_results[0].result) == in_retail[person], person
        follow = (
            await stub.Ask(
                gpb.GatewayServiceAskRequest(
                    question="what about Energy?",
                    mode=qpb.ASK_MODE_SQL,
                    conversation_id=routed.conversation_id,
                ),
                metadata=meta,
                timeout=60,
            )
        ).answer
        assert follow.sql_results, (person, seen(follow))
        assert first_number(follow.sql_results[0].result) == in_energy[person], (
            person,
            seen(follow),
        )
    # A value only other regions' rows hold is placed for nobody it would tell about: alice
    # (North America) is told what she is told of a country no row holds (Portugal: a
    # country too, so the names nearest in meaning are the same), the SQL service's reason
    # included; bob (EMEA) counts his German companies.
    in_germany = region_count(world.stack, "country = 'Germany'")
    assert in_germany["bob"] > 0 and in_germany["alice"] == 0

    async def sql_answer(person: str, question: str) -> qpb.Answer:
        reply = await stub.Ask(
            gpb.GatewayServiceAskRequest(question=question, mode=qpb.ASK_MODE_SQL),
            metadata=world.as_(person),
            timeout=60,
        )
        answer: qpb.Answer = reply.answer
        return answer

    bobs = await sql_answer("bob", "How many companies are in Germany?")
    assert first_number(bobs.sql_results[0].result) == in_germany["bob"]
    elsewhere = await sql_answer("alice", "How many companies are in Germany?")
    nowhere = await sql_answer("alice", "How many companies are in Portugal?")
    assert not elsewhere.sql_results and not nowhere.sql_results
    assert (elsewhere.outcome, elsewhere.text.replace("Germany", "Portugal")) == (
        nowhere.outcome,
        nowhere.text,
    )
    assert "Asked of the database" in nowhere.text, nowhere.text  # the reason, helpfully
    # The hidden column: hr (bob) and a service key read it; the others are refused, and it
    # is not in the schema they are shown.
    revenue = "SELECT sum(annual_revenue) AS revenue FROM companies"
    for person, may in (("alice", False), ("bob", True), ("carol", False)):
        schema = await stub.DescribeSchema(
            gpb.GatewayServiceDescribeSchemaRequest(), metadata=world.as_(person), timeout=30
        )
        assert ("annual_revenue" in seen(schema)) is may, person
        validated = await stub.ValidateSql(
            gpb.GatewayServiceValidateSqlRequest(sql=revenue),
            metadata=world.as_(person),
            timeout=30,
        )
        assert validated.valid is may, (person, seen(validated))
        if not may:
            assert {v.rule for v in validated.violations} == {spb.SQL_GATE_RULE_ACCESS_DENIED}, (
                person
            )
            asked = await stub.AskSql(
                gpb.GatewayServiceAskSqlRequest(
                    question="What is the total annual revenue of companies?"
                ),
                metadata=world.as_(person),
                timeout=60,
            )
            assert "annual_revenue" not in asked.result.sql, (person, seen(asked))


# Fields that differ between two calls whatever they ask (ids, clocks).
_VOLATILE = frozenset(
    {"answerId", "timings", "usage", "duration", "executionDuration", "fingerprint"}
)


def _shape(reply: Message, literal: str) -> object:
    """A reply as what it tells: every field but ids and clocks, the asked literal blanked."""

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value.replace(literal, "<value>") if isinstance(value, str) else value

    return strip(json_format.MessageToDict(reply))


async def test_a_value_only_hidden_rows_hold_reads_as_one_no_row_holds(world: World):
    """AskSql for a principal under a row filter: a value only rows hidden from them hold
    (Germany, for alice in North America) and one no row holds (Portugal) end alike,
    reason and message the same but for the literal; nothing names a hidden value. The
    service key asks first, so whatever it leaves behind (a linker's vocabulary, a reading,
    a checker's stored values: derived from the full catalog) is there to be misused."""
    stub = world.stub
    with psycopg.connect(world.stack.database_url(DEFAULT_DATABASE)) as conn:
        hidden = {
            row[0]
            for row in conn.execute(
                "SELECT country FROM companies GROUP BY country "
                "HAVING bool_and(region_id::text <> %s)",
                (PEOPLE["alice"].attribute("region_id"),),
            ).fetchall()
        }
    assert "Germany" in hidden and "Portugal" not in hidden, hidden
    templates = (
        "How many companies are in {}?",
        "Which companies are in {}?",
        # grouped: "how many … by industry" counts per industry
        "How many companies are in {} by industry?",
        # a listing "by industry" (s62): the companies with their industry, ordered by it
        # (until s61 the words were dropped; s61 refused them)
        "Show the companies in {} by industry",
    )
    for template in templates:
        full = await stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question=template.format("Germany")),
            metadata=world.service(),
            timeout=60,
        )
        assert full.outcome == spb.SQL_ASK_OUTCOME_ANSWERED, seen(full)  # the full view links it
    # a misspelling no value is spelled as: the full view offers 'Germany' for it
    typo = "How many companies are in Germny?"
    full_typo = await stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=typo), metadata=world.service(), timeout=60
    )
    assert "Germany" in full_typo.message, seen(full_typo)
    alice = world.as_("alice")
    for template in templates:
        replies = {
            value: await stub.AskSql(
                gpb.GatewayServiceAskSqlRequest(question=template.format(value)),
                metadata=alice,
                timeout=60,
            )
            for value in ("Germany", "Portugal")
        }
        assert _shape(replies["Germany"], "Germany") == _shape(replies["Portugal"], "Portugal"), (
            template,
            seen(replies["Germany"]),
            seen(replies["Portugal"]),
        )
        assert_none_of(seen(replies["Germany"]), hidden - {"Germany"}, f"alice {template}")
    told = await stub.AskSql(gpb.GatewayServiceAskSqlRequest(question=typo), metadata=alice,
                             timeout=60)  # fmt: skip
    assert_none_of(seen(told), hidden, "alice's misspelling")


async def test_a_shared_pair_runs_with_each_principals_filters_and_anothers_is_not_reused(
    world: World,
):
    stub = world.stub
    counts = region_count(world.stack)
    shared = await stub.TeachSql(
        gpb.GatewayServiceTeachSqlRequest(
            question=COUNT, sql="SELECT count(*) AS companies FROM companies"
        ),
        metadata=world.service(),
        timeout=60,
    )
    assert shared.pair.taught_by == ""
    for person in ("alice", "bob", "carol"):
        reply = await stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question=COUNT),
            metadata=world.as_(person),
            timeout=60,
        )
        assert reply.confirmed_pair.pair_id == shared.pair.pair_id, person
        assert first_number(reply.result) == counts[person], person
    # alice's own pair (the same question) is hers: reused for her, never for bob.
    taught = await stub.TeachSql(
        gpb.GatewayServiceTeachSqlRequest(
            question=COUNT, sql="SELECT count(*) AS companies FROM companies"
        ),
        metadata=world.as_("alice"),
        timeout=60,
    )
    assert taught.pair.taught_by == "alice"
    for person, pair in (("alice", taught.pair), ("bob", shared.pair)):
        reply = await stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(question=COUNT),
            metadata=world.as_(person),
            timeout=60,
        )
        assert reply.confirmed_pair.pair_id == pair.pair_id, person
    # bob neither lists, deletes nor rates what is alice's.
    listed = await stub.ListConfirmedPairs(
        gpb.GatewayServiceListConfirmedPairsRequest(), metadata=world.as_("bob"), timeout=30
    )
    assert taught.pair.pair_id not in seen(listed)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.DeleteConfirmedPair(
            gpb.GatewayServiceDeleteConfirmedPairRequest(pair_id=taught.pair.pair_id),
            metadata=world.as_("bob"),
            timeout=30,
        )
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    alices = await stub.AskSql(
        gpb.GatewayServiceAskSqlRequest(question=COUNT), metadata=world.as_("alice"), timeout=60
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.SubmitSqlFeedback(
            gpb.GatewayServiceSubmitSqlFeedbackRequest(
                answer_id=alices.answer_id, rating=spb.FEEDBACK_RATING_HELPFUL
            ),
            metadata=world.as_("bob"),
            timeout=30,
        )
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


# -- keys and the trail ------------------------------------------------------------------


async def test_who_may_name_a_principal_and_the_trail_names_them(world: World):
    stub = world.stub
    search = gpb.GatewayServiceSearchRequest(query="codeword")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Search(
            search, metadata=[*world.service(), *PEOPLE["alice"].headers()], timeout=30
        )
    assert decode(refused.value).reason == "ACT_AS_NOT_GRANTED"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Search(search, metadata=bearer(world.act_as_key), timeout=30)
    assert decode(refused.value).reason == "PRINCIPAL_REQUIRED"
    await stub.Search(search, metadata=world.as_("carol"), timeout=30)
    # The audit trail (written in batches: give it a moment) names carol's call and holds
    # no codeword.
    for _ in range(50):
        trail = await stub.ListAuditEvents(
            gpb.GatewayServiceListAuditEventsRequest(principal_id="carol", rpc="Search"),
            metadata=world.service(),
            timeout=30,
        )
        if trail.events:
            break
        await asyncio.sleep(0.2)
    assert trail.events and all(e.principal_id == "carol" for e in trail.events)
    assert {d for e in trail.events for d in e.document_ids} <= READS["carol"]
    everything = await stub.ListAuditEvents(
        gpb.GatewayServiceListAuditEventsRequest(page_size=1000),
        metadata=world.service(),
        timeout=30,
    )
    assert_none_of(seen(everything), {c for _, c in DOCUMENTS.values()}, "audit trail")


# -- docs/api.md's worked example ---------------------------------------------------------


async def test_the_readme_example_two_people_one_question_two_answers(world: World):
    """ "People inside a tenant" in docs/api.md, as written there."""
    stub = world.stub
    documents = [
        rpb.DocumentInput(
            document_id="playbook",
            title="Sales playbook",
            text="This quarter's discount ceiling is 12 percent.",
            acl=rpb.DocumentAcl(groups=["sales"]),
        ),
        rpb.DocumentInput(
            document_id="bands",
            title="Salary bands",
            text="The discount ceiling for staff purchases is 30 percent.",
            acl=rpb.DocumentAcl(groups=["hr"]),
        ),
    ]
    async for _ in stub.IngestDocuments(
        gpb.GatewayServiceIngestDocumentsRequest(documents=documents),
        metadata=world.service(),
        timeout=60,
    ):
        pass
    ask = gpb.GatewayServiceAskRequest(question="What is the discount ceiling?")
    alice = (await stub.Ask(ask, metadata=world.as_("alice"), timeout=60)).answer
    bob = (await stub.Ask(ask, metadata=world.as_("bob"), timeout=60)).answer
    assert "12 percent" in alice.text and "30 percent" not in seen(alice)
    assert "30 percent" in bob.text and "12 percent" not in seen(bob)
    assert {c.document_id for c in alice.citations} == {"playbook"}
    assert {c.document_id for c in bob.citations} == {"bands"}
    count = gpb.GatewayServiceAskSqlRequest(question=COUNT)
    answers = {
        who: first_number((await stub.AskSql(count, metadata=meta, timeout=60)).result)
        for who, meta in (
            ("alice", world.as_("alice")),
            ("bob", world.as_("bob")),
            ("service", world.service()),
        )
    }
    assert answers == {"alice": 117, "bob": 91, "service": 300}
