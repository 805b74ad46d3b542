"""What one call's audit event holds, from the servicer method's side (a plain servicer of
our own, no network): identifiers and value names from the response, the status of a
failure, the principal a call was made for — and never a question, an answer, a quote
or a statement, wherever in the response they sit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from gateway._audit import AuditLog, audit_rpcs, note_caller
from gateway._settings import AuditSettings
from services.common import Database, PermissionDenied, Principal, current_principal
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

KEY = "tdm_abcdefghijklmnop_" + "S" * 43
SECRET_TEXT = "zqcanarysecretquestion"


class Context:
    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {KEY}"),)


def _answer() -> qpb.Answer:
    return qpb.Answer(
        request_id="req-1",
        text=f"The answer says {SECRET_TEXT} [1]",
        route=qpb.ROUTE_COMPOUND,
        outcome=qpb.ANSWER_OUTCOME_ANSWERED,
        plan=qpb.Plan(steps=[
            qpb.PlanStep(step_id="s1", tool=qpb.TOOL_SEMANTIC_SEARCH, input_summary=SECRET_TEXT),
            qpb.PlanStep(step_id="s2", tool=qpb.TOOL_SQL_QUESTION),
        ]),
        citations=[
            cpb.Citation(document_id="hr-handbook", quote=SECRET_TEXT, title=SECRET_TEXT),
            cpb.Citation(document_id="hr-handbook", quote="again"),
            cpb.Citation(kind=cpb.CITATION_KIND_SQL_RESULT, quote=SECRET_TEXT),
        ],
        sql_results=[qpb.SqlStepResult(result=spb.SqlResult(
            sql=f"SELECT '{SECRET_TEXT}' FROM public.deals", tables_used=["public.deals"]))],
        resolution=qpb.FollowUpResolution(resolved_question=SECRET_TEXT),
    )  # fmt: skip


@audit_rpcs(["Ask", "StreamAsk", "Search", "IngestDocuments"])
class Servicer:
    """Answers as a servicer would, after admitting the caller like ``_admit``."""

    def __init__(self, log: AuditLog | None, fail: BaseException | None = None) -> None:
        self.audit_log = log
        self.fail = fail
        self.principal: Principal | None = None

    def _admit(self) -> None:
        note_caller("acme", KEY[4:20])
        current_principal.set(self.principal)
        if self.fail is not None:
            raise self.fail

    async def Ask(self, request: Any, context: Any) -> gpb.GatewayServiceAskResponse:
        self._admit()
        return gpb.GatewayServiceAskResponse(answer=_answer())

    async def StreamAsk(
        self, request: Any, context: Any
    ) -> AsyncIterator[gpb.GatewayServiceStreamAskResponse]:
        self._admit()
        yield gpb.GatewayServiceStreamAskResponse(answer_delta=qpb.AnswerDelta(text=SECRET_TEXT))
        yield gpb.GatewayServiceStreamAskResponse(final_answer=_answer())

    async def Search(self, request: Any, context: Any) -> gpb.GatewayServiceSearchResponse:
        self._admit()
        return gpb.GatewayServiceSearchResponse(hits=[
            rpb.SearchHit(document_id="a", text=SECRET_TEXT), rpb.SearchHit(document_id="b"),
        ])  # fmt: skip

    async def IngestDocuments(
        self, request: Any, context: Any
    ) -> AsyncIterator[gpb.GatewayServiceIngestDocumentsResponse]:
        self._admit()
        for name in ("d1", "d2"):
            yield gpb.GatewayServiceIngestDocumentsResponse(
                document_finished=rpb.DocumentResult(document_id=name)
            )
        raise asyncio.CancelledError


@pytest.fixture
async def log() -> AsyncIterator[AuditLog]:
    database = Database("postgresql://nobody@127.0.0.1:1/none", min_size=0, vector=False)
    yield AuditLog(
        database,
        AuditSettings(buffer_size=4, batch_size=100),
        recent_tenant=lambda key: "acme" if key == KEY else None,
    )


def _only(log: AuditLog) -> Any:
    assert log.pending == 1
    return log._buffer[0]


async def test_an_answer_leaves_ids_and_value_names_only(log):
    await Servicer(log).Ask(gpb.GatewayServiceAskRequest(question=SECRET_TEXT), Context())
    event = _only(log)
    assert (event.tenant_id, event.key_id, event.principal_id) == ("acme", KEY[4:20], None)
    assert event.route == "ROUTE_COMPOUND" and event.status == "OK"
    assert event.tools == ["TOOL_SEMANTIC_SEARCH", "TOOL_SQL_QUESTION"]
    assert event.document_ids == ["hr-handbook"] and event.tables_read == ["public.deals"]
    assert event.answer_outcome == "ANSWER_OUTCOME_ANSWERED" and event.request_id == "req-1"
    assert event.event_time is not None
    assert SECRET_TEXT not in repr(event.row())


async def test_a_stream_is_recorded_once_from_its_events(log):
    servicer = Servicer(log)
    servicer.principal = Principal.of("ann", ["sales"], {"region": "EMEA"})
    events = [e async for e in servicer.StreamAsk(gpb.GatewayServiceStreamAskRequest(), Context())]
    assert len(events) == 2
    event = _only(log)
    assert event.principal_id == "ann" and event.route == "ROUTE_COMPOUND"
    assert SECRET_TEXT not in repr(event.row())


async def test_search_hits_and_an_ingest_cut_midway(log):
    await Servicer(log).Search(gpb.GatewayServiceSearchRequest(), Context())
    with pytest.raises(asyncio.CancelledError):
        async for _ in Servicer(log).IngestDocuments(None, Context()):
            pass
    search, ingest = list(log._buffer)
    assert search.document_ids == ["a", "b"]
    assert ingest.document_ids == ["d1", "d2"] and ingest.status == "CANCELLED"


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (PermissionDenied("no", reason="API_KEY_SCOPE_MISSING"), "PERMISSION_DENIED",
         "API_KEY_SCOPE_MISSING"),
        (ValueError("a bug"), "INTERNAL", ""),
        (asyncio.CancelledError(), "CANCELLED", ""),
    ],
)  # fmt: skip
async def test_a_failed_call_is_recorded_with_its_status_and_reason(log, error, status, reason):
    with pytest.raises(type(error)):
        await Servicer(log, fail=error).Ask(gpb.GatewayServiceAskRequest(), Context())
    event = _only(log)
    assert (event.status, event.reason) == (status, reason)
    assert event.route == "" and event.document_ids == []


async def test_a_call_refused_before_admission_names_a_recently_verified_key_only(log):
    class Refused:
        audit_log = log

        async def Search(self, request: Any, context: Any) -> Any:
            raise PermissionDenied("no", reason="API_KEY_SCOPE_MISSING")

    audit_rpcs(["Search"])(Refused)
    with pytest.raises(PermissionDenied):
        await Refused().Search(None, Context())
    event = _only(log)
    assert (event.tenant_id, event.key_id) == ("acme", KEY[4:20])


async def test_without_a_trail_the_call_is_untouched():
    reply = await Servicer(None).Ask(gpb.GatewayServiceAskRequest(), Context())
    assert reply.answer.request_id == "req-1"


async def test_past_the_buffer_records_are_dropped_and_counted_not_waited_for(log):
    for _ in range(6):
        await Servicer(log).Search(gpb.GatewayServiceSearchRequest(), Context())
    assert log.pending == 4 and log.dropped == 2


def test_status_names_are_grpcs():
    from gateway._audit import STATUS_NAMES

    assert {"OK", "PERMISSION_DENIED", "UNAVAILABLE"} <= STATUS_NAMES
    assert len(STATUS_NAMES) == len(grpc.StatusCode)


def test_an_rpc_whose_response_names_a_document_records_it_without_a_row_of_its_own():
    from gateway._audit import OBSERVERS, AuditEvent, _observer

    assert "DeleteDocument" not in OBSERVERS and _observer("DeleteConversation") is None
    observe = _observer("DeleteDocument")
    assert observe is not None
    event = AuditEvent("DeleteDocument")
    observe(event, gpb.GatewayServiceDeleteDocumentResponse(document_id="gone"))
    assert event.document_ids == ["gone"]


async def test_a_recording_bug_never_fails_the_call(log, monkeypatch):
    from gateway import _audit

    def broken(event: Any, response: Any) -> None:
        raise RuntimeError("a bug in the recorder")

    monkeypatch.setitem(_audit.OBSERVERS, "Search", broken)

    @audit_rpcs(["Search"])  # the observer is chosen here: the broken one
    class Plain:
        audit_log = log

        async def Search(self, request: Any, context: Any) -> Any:
            return gpb.GatewayServiceSearchResponse(hits=[rpb.SearchHit(document_id="a")])

    reply = await Plain().Search(gpb.GatewayServiceSearchRequest(), Context())
    assert [h.document_id for h in reply.hits] == ["a"]
    assert _only(log).status == "OK"
