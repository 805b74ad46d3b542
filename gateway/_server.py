"""The GatewayService servicer (auth, quota, validation, forwarding) and its bootstrap.

Every public call goes: API key → tenant (UNAUTHENTICATED otherwise), the tenant's token
bucket (RESOURCE_EXHAUSTED with RetryInfo), the principal the call is made for (see
``_admit``), validation of every field (INVALID_ARGUMENT naming it), then one internal
call scoped to the tenant and principal under what is left of the deadline. Health and
reflection are served without a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from gateway import _validation as check
from gateway._admission import QuotaGate, bearer_token
from gateway._audit import AuditLog, audit_off, audit_rpcs, event_pb, note_caller, parse_query
from gateway._audit import app_conninfo as audit_conninfo
from gateway._conversations import (
    ConversationStore,
    HistoryLimits,
    Turn,
    app_conninfo,
    not_found,
    parse_id,
)
from gateway._key_changes import KeyChanges
from gateway._keys import ApiKeys, Caller, Scope
from gateway._quota import TokenBuckets
from gateway._relay import relay, reparse, to_internal, unreachable
from gateway._routes import ROUTES
from gateway._schema import migrations
from gateway._settings import DEFAULT_PORT, GatewaySettings, key_pepper
from gateway._upload import (
    UPLOAD_OPTIONS,
    Spool,
    Uploads,
    drain_budget,
    ingest_call,
    ingest_message,
    internal_message_bytes,
    read_upload,
)
from services.common import (
    PRINCIPAL_HEADER,
    PRINCIPAL_HEADERS,
    Database,
    DatabaseSettings,
    FailedPrecondition,
    GrpcServer,
    InvalidArgument,
    PermissionDenied,
    Principal,
    ServerSettings,
    TandemError,
    Telemetry,
    TelemetrySettings,
    Trust,
    Unavailable,
    WritePositions,
    configure_logging,
    create_channel,
    deadline_scope,
    lsn_from_trailer,
    parse_principal,
    read_after,
    report_on_error,
    resolve_url,
    serve,
)
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import router_service_pb2_grpc as qpb_grpc
from tandem.v1 import sql_service_pb2_grpc as spb_grpc

SERVICE_NAME = gpb.DESCRIPTOR.services_by_name["GatewayService"].full_name
_log = logging.getLogger("tandem.gateway")
R = TypeVar("R", bound=Message)
Context = grpc.aio.ServicerContext[Any, Any]


# The scope each RPC needs (a key holds one or more; see gateway._keys.Scope): reading
# and asking, changing the documents, and changing what other users' answers reuse are
# separate grants. A test walks the service descriptor so a new RPC cannot go unscoped.
RPC_SCOPES: dict[str, Scope] = {
    "Ask": Scope.ASK,
    "StreamAsk": Scope.ASK,
    "Search": Scope.ASK,
    "AskSql": Scope.ASK,
    "RunSqlIntent": Scope.ASK,
    "ValidateSql": Scope.ASK,
    "DescribeSchema": Scope.ASK,
    "ListConfirmedPairs": Scope.ASK,
    "ListConversations": Scope.ASK,
    "DeleteConversation": Scope.ASK,
    "IngestDocuments": Scope.INGEST,
    "UploadDocument": Scope.INGEST,
    "DeleteDocument": Scope.INGEST,
    "UpdateDocumentAcl": Scope.INGEST,
    "SubmitSqlFeedback": Scope.TEACH,
    "TeachSql": Scope.TEACH,
    "DeleteConfirmedPair": Scope.TEACH,
    "ListAuditEvents": Scope.ADMIN,
    "GetCaller": Scope.ASK,
}

# Data calls: every RPC reads or changes what some person may see, so a key holding
# ``act_as`` must name the principal on each (never widened to the tenant's full view).
# An RPC that is not about any person's data (operator work such as listing the audit
# trail) is listed here instead; a key without ``act_as`` may still not send principal
# headers to it. A contract test walks the service descriptor: an RPC not listed here
# needs the principal.
PRINCIPAL_FREE_RPCS: frozenset[str] = frozenset({"ListAuditEvents", "GetCaller"})


def act_as_not_granted() -> PermissionDenied:
    """Principal headers from a service key: refused, never ignored (a backend that thinks
    it restricts a user must learn that it does not)."""
    return PermissionDenied(
        "this API key may not act as a principal: it lacks the 'act_as' scope "
        "(`tandem keys scope KEY_ID --set ...,act_as` grants it); send no "
        "x-tandem-principal headers with a service key",
        reason="ACT_AS_NOT_GRANTED",
        metadata={"scope": Scope.ACT_AS.value},
    )


def principal_required() -> InvalidArgument:
    """An ``act_as`` key's data call that names nobody: refused, never the full view."""
    return InvalidArgument.field(
        PRINCIPAL_HEADER,
        "is required: this API key acts as principals, so every data call names the one "
        "it is made for",
        reason="PRINCIPAL_REQUIRED",
    )


def admit_principal(caller: Caller, metadata: Any, *, required: bool = True) -> Principal | None:
    """The principal a call from ``caller`` is made for: None for a service key (the
    tenant's full view). PERMISSION_DENIED ACT_AS_NOT_GRANTED when a service key names
    one; INVALID_ARGUMENT PRINCIPAL_REQUIRED when an ``act_as`` key names none on a data
    call (``required``); PRINCIPAL_INVALID naming the header when an ``act_as`` key's is
    malformed (a service key may send none at all, well-formed or not)."""
    if not caller.acts_as:
        if any(name in PRINCIPAL_HEADERS for name, _ in metadata or ()):
            raise act_as_not_granted()
        return None
    principal = parse_principal(metadata)
    if principal is None and required:
        raise principal_required()
    return principal


@dataclass(frozen=True)
class Admitted:
    """A call let in: who the key is and the principal it calls for (None: full view)."""

    caller: Caller
    principal: Principal | None

    @property
    def tenant(self) -> str:
        return self.caller.tenant


@dataclass(frozen=True)
class GatewayDeps:
    """What the servicer needs: the key store, the tenant buckets and one channel per
    internal service (each created with ``create_channel``: retries and deadlines)."""

    settings: GatewaySettings
    keys: ApiKeys
    quota: TokenBuckets
    router_channel: grpc.aio.Channel
    retrieval_channel: grpc.aio.Channel
    sql_channel: grpc.aio.Channel
    # None switches conversations off: Ask answers standalone and a conversation id or
    # the conversation RPCs get FAILED_PRECONDITION.
    conversations: ConversationStore | None = None
    # None switches the audit trail off (ListAuditEvents: FAILED_PRECONDITION).
    audit: AuditLog | None = None


# -- fail-open responses: an unreachable engine degrades Ask and Search, visibly ---------


def _degraded(service: str) -> None:
    _log.warning(
        "dependency unreachable; answering degraded",
        extra={"fields": {"service": service}},
    )


def unanswered(mode: qpb.AskMode.ValueType) -> qpb.Answer:
    """What Ask returns when the router cannot be reached: no claims, only the reason."""
    return qpb.Answer(
        request_id=uuid.uuid4().hex,
        text="No answer: the answering service is unreachable right now. Try again shortly.",
        outcome=qpb.ANSWER_OUTCOME_PARTIAL,
        mode=mode or qpb.ASK_MODE_AUTO,
        confidence=0.0,
        disclaimer="The router was unreachable; nothing was searched or queried.",
        degraded=True,
        degradations=[
            cpb.Degradation(
                reason=cpb.DEGRADATION_REASON_DEPENDENCY_ERROR,
                component="router",
                message="the router service is unreachable",
            )
        ],
    )


def unanswered_stream(mode: qpb.AskMode.ValueType) -> list[gpb.GatewayServiceStreamAskResponse]:
    answer = unanswered(mode)
    return [
        gpb.GatewayServiceStreamAskResponse(
            accepted=qpb.AskAccepted(request_id=answer.request_id, mode=answer.mode)
        ),
        gpb.GatewayServiceStreamAskResponse(final_answer=answer),
    ]


@dataclass(frozen=True)
class _Conversation:
    """The conversation an Ask continues (``new`` when the gateway just made its id)."""

    conversation_id: str
    new: bool
    history: tuple[Turn, ...]


def conversations_off() -> FailedPrecondition:
    return FailedPrecondition(
        "conversations are switched off on this gateway", reason="CONVERSATIONS_DISABLED"
    )


def turn_pb(turn: Turn) -> qpb.ConversationTurn:
    """A stored turn as the router reads it."""
    out = qpb.ConversationTurn(
        question=turn.question,
        resolved_question=turn.resolved_question,
        route=turn.route,  # type: ignore[arg-type]
        follow_up_kind=turn.follow_up_kind,  # type: ignore[arg-type]
        members=turn.members,
        sql_fingerprints=turn.sql_fingerprints,
        cited_chunk_ids=turn.cited_chunk_ids,
        row_count=turn.row_count,
        sql=turn.sql,
    )
    if turn.create_time is not None:
        out.create_time.FromDatetime(turn.create_time)
    return out


def turn_from(question: str, answer: qpb.Answer) -> Turn:
    """What to store for an answered question: the router's own description of the turn
    when it gave one (an unreachable router gives none: the question alone is kept)."""
    described = answer.turn
    return Turn(
        question=question,
        resolved_question=described.resolved_question or question,
        route=described.route or answer.route,
        follow_up_kind=described.follow_up_kind,
        members=tuple(described.members),
        sql_fingerprints=tuple(described.sql_fingerprints),
        cited_chunk_ids=tuple(described.cited_chunk_ids),
        row_count=described.row_count,
        sql=described.sql,
    )


def _relayed(name: str) -> Any:
    """The servicer method for pass-through RPC ``name`` (typed ``Any``: it stands in for
    the generated base's method of that name, whose types the route table holds)."""
    if ROUTES[name].streaming:

        async def stream(
            self: GatewayServicer, request: Message, context: Context
        ) -> AsyncIterator[Message]:
            async for event in self._forward_stream(name, request, context):
                yield event

        stream.__name__ = stream.__qualname__ = name
        return stream

    async def unary(self: GatewayServicer, request: Message, context: Context) -> Message:
        return await self._forward(name, request, context)

    unary.__name__ = unary.__qualname__ = name
    return unary


class _Backends:
    def __init__(self, deps: GatewayDeps) -> None:
        self.deps = deps
        self.router = qpb_grpc.RouterServiceStub(deps.router_channel)
        self.retrieval = rpb_grpc.RetrievalServiceStub(deps.retrieval_channel)
        self.sql = spb_grpc.SqlServiceStub(deps.sql_channel)
        self.uploads = Uploads(deps.settings.uploads)


# The tenant the current request's key named (set at admission), for the write
# position its internal calls hand back.
_admitted_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "gateway_admitted_tenant", default=None
)


@audit_rpcs(RPC_SCOPES)
class GatewayServicer(gpb_grpc.GatewayServiceServicer):
    """Thin: admit the caller, validate, forward to one internal service, relay back.

    The server binds before the database is reached (health NOT_SERVING meanwhile), so
    the dependencies arrive through ``attach``; until then calls get UNAVAILABLE. A tenant
    over its quota is refused by ``gate`` (the server's first interceptor) before the
    call reaches the servicer, as long as its key verified recently.
    """

    def __init__(
        self,
        deps: GatewayDeps | None = None,
        gate: QuotaGate | None = None,
        *,
        trust: Trust | None = None,
    ) -> None:
        self.gate = gate or QuotaGate(gpb.DESCRIPTOR.services_by_name["GatewayService"])
        self.trust = trust or Trust.plaintext()
        self._backends: _Backends | None = None
        # Each tenant's last write position (retrieval's ``x-tandem-lsn`` trailer), sent
        # with the tenant's next calls: a read served by any retrieval replica, or by the
        # router's searches, sees the tenant's own writes (services/common/_replicas.py).
        self.positions = WritePositions()
        if deps is not None:
            self.attach(deps)

    def attach(self, deps: GatewayDeps) -> None:
        self._backends = _Backends(deps)
        self.gate.attach(deps.keys, deps.quota)

    @property
    def audit_log(self) -> AuditLog | None:
        """Where each call's audit record goes (``gateway._audit``); None until attached
        or when the trail is off."""
        return None if self._backends is None else self._backends.deps.audit

    def _ready(self) -> _Backends:
        if self._backends is None:
            raise Unavailable("the gateway is starting", reason="GATEWAY_STARTING")
        return self._backends

    async def _admit(self, context: Context, rpc: str) -> tuple[_Backends, Admitted]:
        """The verified caller of a key holding ``rpc``'s scope, after its bucket paid for
        the call, with the principal it calls for (``admit_principal``). The one way into
        every RPC: key, quota, principal, then the RPC validates its request."""
        backends = self._ready()
        metadata = context.invocation_metadata()
        caller = await backends.deps.keys.authorize(bearer_token(metadata), RPC_SCOPES[rpc])
        note_caller(caller.tenant, caller.key_id)
        backends.deps.quota.take(caller.tenant)
        principal = admit_principal(caller, metadata, required=rpc not in PRINCIPAL_FREE_RPCS)
        # Every internal call this request makes carries the tenant the key named and the
        # principal, signed (the principal's headers forwarded in canonical form).
        self.trust.sign_for(caller.tenant, principal)
        _admitted_tenant.set(caller.tenant)
        read_after.set(self.positions.get(caller.tenant))
        return backends, Admitted(caller, principal)

    def _deadline(self, context: Context, default_s: float) -> AbstractContextManager[Any]:
        """This RPC's default deadline for a call that arrived without one; a caller's own
        deadline is already in scope (the runtime interceptor set it). Internal calls
        take their timeout from the scope when they are created."""
        if context.time_remaining() is not None:
            return nullcontext()
        return deadline_scope(default_s)

    async def _unary(
        self,
        context: Context,
        service: str,
        start: Callable[[], Awaitable[Message]],
        response: type[R],
        *,
        fail_open: Callable[[], R] | None = None,
    ) -> R:
        with self._deadline(context, self._ready().deps.settings.default_deadline_s):
            call = start()
        try:
            reply = await call
            await self._note_position(call)
        except grpc.aio.AioRpcError as exc:
            if fail_open is not None and unreachable(exc):
                _degraded(service)
                return fail_open()
            raise relay(exc, service) from None
        finally:
            # A cancelled caller cancels the internal call with it.
            call.cancel()  # type: ignore[attr-defined]
        return reparse(reply, response)

    async def _note_position(self, call: Any) -> None:
        """Remember the write position a finished internal call's trailer carried (only
        retrieval's writes send one, with a standby configured)."""
        tenant = _admitted_tenant.get()
        if tenant is not None:
            self.positions.note(tenant, lsn_from_trailer(await call.trailing_metadata()))

    async def _stream(
        self,
        context: Context,
        service: str,
        start: Callable[[], Any],
        response: type[R],
        *,
        default_s: float,
        fail_open: Callable[[], list[R]] | None = None,
        settled: rpb.IngestCheckpoint | None = None,
    ) -> AsyncIterator[R]:
        """``settled`` (an ingest): each document the stream reports settled is noted in
        it, and a call cut midway (retrieval gone, a deadline) reports it in its status,
        unless retrieval's own status already does."""
        if settled is not None:
            report_on_error(lambda: settled if settled.documents else None)
        with self._deadline(context, default_s):
            call = start()
        sent = False
        try:
            async for event in call:
                sent = True
                if settled is not None and event.HasField("document_finished"):
                    settled.documents.append(event.document_finished)
                yield reparse(event, response)
            await self._note_position(call)
        except grpc.aio.AioRpcError as exc:
            if fail_open is not None and not sent and unreachable(exc):
                _degraded(service)
                for event in fail_open():
                    yield event
                return
            raise relay(exc, service) from None
        finally:
            # The caller went away or failed: stop the internal work too.
            call.cancel()

    async def _open_conversation(
        self, backends: _Backends, admitted: Admitted, conversation_id: str
    ) -> _Conversation | None:
        """The conversation to continue (its bounded history), a new one when no id was
        sent, or None when conversations are off and none was asked for."""
        store = backends.deps.conversations
        if not conversation_id:
            if store is None:
                return None
            return _Conversation(str(uuid.uuid4()), True, ())
        wanted = parse_id(conversation_id)
        if store is None:
            raise conversations_off()
        settings = backends.deps.settings
        limits = HistoryLimits(
            settings.conversation_history_turns, settings.conversation_history_chars
        )
        history = await store.history(admitted.tenant, wanted, limits, admitted.principal)
        return _Conversation(wanted, False, tuple(history))

    async def _record_turn(
        self,
        backends: _Backends,
        admitted: Admitted,
        conversation: _Conversation | None,
        question: str,
        answer: qpb.Answer,
    ) -> None:
        """Store the turn and stamp the answer with its conversation. A store failure
        does not take the answer away: it is reported as a degradation instead."""
        if conversation is None:
            return
        store = backends.deps.conversations
        assert store is not None
        answer.conversation_id = conversation.conversation_id
        try:
            index = await store.append(
                admitted.tenant, conversation.conversation_id, turn_from(question, answer),
                new=conversation.new, principal=admitted.principal,
            )  # fmt: skip
        except TandemError as exc:
            _log.warning(
                "conversation turn not stored",
                extra={"fields": {"reason": exc.reason, "new": conversation.new}},
            )
            answer.degraded = True
            answer.degradations.append(
                cpb.Degradation(
                    reason=cpb.DEGRADATION_REASON_DEPENDENCY_ERROR,
                    component="conversations",
                    message="this turn was not stored; a follow-up may not see it",
                )
            )
            return
        if index == 0:
            # Deleted (or expired) while the answer was being made: not resurrected.
            raise not_found(conversation.conversation_id)

    @staticmethod
    def _with_history(internal: R, conversation: _Conversation | None) -> R:
        if conversation is not None:
            internal.conversation_id = conversation.conversation_id  # type: ignore[attr-defined]
            internal.history.extend(turn_pb(t) for t in conversation.history)  # type: ignore[attr-defined]
        return internal

    async def _forward(self, name: str, request: Message, context: Context) -> Message:
        """A unary pass-through RPC: admit, validate, re-parse, call, relay back."""
        route = ROUTES[name]
        backends, admitted = await self._admit(context, name)
        route.check(request, backends.deps.settings.limits)
        internal = to_internal(request, route.internal, admitted.tenant)
        method = getattr(getattr(backends, route.backend), route.method)
        fail_open = route.fail_open
        return await self._unary(
            context, route.backend, lambda: method(internal), route.response,
            fail_open=None if fail_open is None else lambda: fail_open(request),
        )  # fmt: skip

    async def _forward_stream(
        self, name: str, request: Message, context: Context
    ) -> AsyncIterator[Message]:
        """A server-streaming pass-through RPC (ingest): the same steps, event by event,
        under the ingest deadline."""
        route = ROUTES[name]
        backends, admitted = await self._admit(context, name)
        route.check(request, backends.deps.settings.limits)
        internal = to_internal(request, route.internal, admitted.tenant)
        method = getattr(getattr(backends, route.backend), route.method)
        async for event in self._stream(
            context, route.backend, lambda: method(internal), route.response,
            default_s=backends.deps.settings.ingest_deadline_s,
            settled=rpb.IngestCheckpoint(documents_total=len(internal.documents)),  # type: ignore[attr-defined]
        ):  # fmt: skip
            yield event

    # -- RPCs ------------------------------------------------------------------------

    async def Ask(
        self, request: gpb.GatewayServiceAskRequest, context: Context
    ) -> gpb.GatewayServiceAskResponse:
        backends, admitted = await self._admit(context, "Ask")
        check.check_ask(request, backends.deps.settings.limits)
        question = request.question
        with self._deadline(context, backends.deps.settings.default_deadline_s):
            conversation = await self._open_conversation(
                backends, admitted, request.conversation_id
            )
            internal = self._with_history(
                to_internal(request, qpb.AskRequest, admitted.tenant), conversation
            )
            response = await self._unary(
                context, "router", lambda: backends.router.Ask(internal),
                gpb.GatewayServiceAskResponse,
                fail_open=lambda: gpb.GatewayServiceAskResponse(answer=unanswered(request.mode)),
            )  # fmt: skip
            await self._record_turn(backends, admitted, conversation, question, response.answer)
        return response

    async def StreamAsk(
        self, request: gpb.GatewayServiceStreamAskRequest, context: Context
    ) -> AsyncIterator[gpb.GatewayServiceStreamAskResponse]:
        backends, admitted = await self._admit(context, "StreamAsk")
        check.check_ask(request, backends.deps.settings.limits)
        question = request.question
        with self._deadline(context, backends.deps.settings.default_deadline_s):
            conversation = await self._open_conversation(
                backends, admitted, request.conversation_id
            )
        internal = self._with_history(
            to_internal(request, qpb.StreamAskRequest, admitted.tenant), conversation
        )
        async for event in self._stream(
            context, "router", lambda: backends.router.StreamAsk(internal),
            gpb.GatewayServiceStreamAskResponse,
            default_s=backends.deps.settings.default_deadline_s,
            fail_open=lambda: unanswered_stream(request.mode),
        ):  # fmt: skip
            if conversation is not None:
                if event.HasField("accepted"):
                    event.accepted.conversation_id = conversation.conversation_id
                elif event.HasField("final_answer"):
                    # Stored before the client sees the end, so its next question finds it.
                    await self._record_turn(
                        backends, admitted, conversation, question, event.final_answer
                    )
            yield event

    # Pass-through RPCs: one generic relay over the route table (gateway._routes).
    Search = _relayed("Search")
    IngestDocuments = _relayed("IngestDocuments")
    DeleteDocument = _relayed("DeleteDocument")
    UpdateDocumentAcl = _relayed("UpdateDocumentAcl")
    AskSql = _relayed("AskSql")
    RunSqlIntent = _relayed("RunSqlIntent")
    ValidateSql = _relayed("ValidateSql")
    DescribeSchema = _relayed("DescribeSchema")
    SubmitSqlFeedback = _relayed("SubmitSqlFeedback")
    TeachSql = _relayed("TeachSql")
    ListConfirmedPairs = _relayed("ListConfirmedPairs")
    DeleteConfirmedPair = _relayed("DeleteConfirmedPair")

    async def UploadDocument(
        self,
        request_iterator: AsyncIterator[gpb.GatewayServiceUploadDocumentRequest],
        context: Context,
    ) -> AsyncIterator[gpb.GatewayServiceUploadDocumentResponse]:
        backends = self._ready()
        limit = backends.deps.settings.limits.max_upload_bytes
        uploads = backends.uploads
        try:
            backends, admitted = await self._admit(context, "UploadDocument")
        except TandemError:
            # The refusal reaches the client only once it has stopped writing.
            await uploads.drain(request_iterator, drain_budget(limit))
            raise
        tenant = admitted.tenant
        spool = Spool(uploads.settings.memory_bytes, uploads.settings.spool_dir)
        refused: TandemError | None = None
        try:
            # The file's bytes count against the budgets from arrival until the answer.
            with uploads.in_flight.account(tenant) as count:
                try:
                    header = await read_upload(request_iterator, limit, spool, count)
                except TandemError as exc:
                    refused = exc
                else:
                    async for event in self._ingest_upload(
                        backends, context, tenant, header, spool
                    ):
                        yield event
        finally:
            spool.close()
        if refused is not None:
            # Drained only now: what it counted is given back, and kept bytes freed.
            await uploads.drain(request_iterator, drain_budget(limit))
            raise refused

    async def _ingest_upload(
        self,
        backends: _Backends,
        context: Context,
        tenant: str,
        header: gpb.GatewayServiceUploadHeader,
        spool: Spool,
    ) -> AsyncIterator[gpb.GatewayServiceUploadDocumentResponse]:
        """Hand the spooled file to retrieval as one message, whole only while it is sent
        and in turns (many uploads finishing at once do not all sit in memory together),
        and relay the ingest's events."""
        default_s = backends.deps.settings.ingest_deadline_s
        with self._deadline(context, default_s):
            async with backends.uploads.sending.turn(spool.size):
                message = await asyncio.to_thread(ingest_message, header, spool, tenant)
                spool.close()
                call = ingest_call(backends.deps.retrieval_channel, message)
                del message
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await call.wait_for_connection()  # sent (a failure is relayed below)
        async for event in self._stream(
            context, "retrieval", lambda: call, gpb.GatewayServiceUploadDocumentResponse,
            default_s=default_s,
            settled=rpb.IngestCheckpoint(documents_total=1),
        ):  # fmt: skip
            yield event

    async def ListConversations(
        self, request: gpb.GatewayServiceListConversationsRequest, context: Context
    ) -> gpb.GatewayServiceListConversationsResponse:
        backends, admitted = await self._admit(context, "ListConversations")
        check.check_list_conversations(request, backends.deps.settings.limits)
        store = backends.deps.conversations
        if store is None:
            raise conversations_off()
        page = await store.page(
            admitted.tenant, page_size=request.page_size, page_token=request.page_token,
            principal=admitted.principal,
        )  # fmt: skip
        out = gpb.GatewayServiceListConversationsResponse(next_page_token=page.next_page_token)
        for item in page.conversations:
            entry = out.conversations.add(
                conversation_id=item.conversation_id, turn_count=item.turn_count,
                title=item.title,
            )  # fmt: skip
            entry.create_time.FromDatetime(item.create_time)
            entry.update_time.FromDatetime(item.update_time)
            entry.expire_time.FromDatetime(item.expire_time)
        return out

    async def DeleteConversation(
        self, request: gpb.GatewayServiceDeleteConversationRequest, context: Context
    ) -> gpb.GatewayServiceDeleteConversationResponse:
        backends, admitted = await self._admit(context, "DeleteConversation")
        conversation_id = parse_id(request.conversation_id)
        store = backends.deps.conversations
        if store is None:
            raise conversations_off()
        turns = await store.delete(admitted.tenant, conversation_id, admitted.principal)
        if turns is None:
            if request.allow_missing:
                return gpb.GatewayServiceDeleteConversationResponse(deleted=False)
            raise not_found(conversation_id)
        return gpb.GatewayServiceDeleteConversationResponse(deleted=True, turns_deleted=turns)

    async def ListAuditEvents(
        self, request: gpb.GatewayServiceListAuditEventsRequest, context: Context
    ) -> gpb.GatewayServiceListAuditEventsResponse:
        backends, admitted = await self._admit(context, "ListAuditEvents")
        tenant = admitted.caller.tenant
        check.check_list_audit_events(request, backends.deps.settings.limits)
        query = parse_query(request)
        log = backends.deps.audit
        if log is None:
            raise audit_off()
        page = await log.page(tenant, query)
        return gpb.GatewayServiceListAuditEventsResponse(
            events=[event_pb(e) for e in page.events], next_page_token=page.next_page_token
        )

    async def GetCaller(
        self, request: gpb.GatewayServiceGetCallerRequest, context: Context
    ) -> gpb.GatewayServiceGetCallerResponse:
        _, admitted = await self._admit(context, "GetCaller")
        caller, principal = admitted.caller, admitted.principal
        return gpb.GatewayServiceGetCallerResponse(
            tenant_id=caller.tenant,
            key_id=caller.key_id,
            scopes=sorted(scope.value for scope in caller.scopes),
            principal_id=principal.id if principal is not None else "",
            principal_groups=sorted(principal.groups) if principal is not None else [],
        )


# -- bootstrap ------------------------------------------------------------------------


def server_settings_for(settings: ServerSettings, gateway: GatewaySettings) -> ServerSettings:
    """The runtime's default deadline is the longest per-RPC default; the servicer
    narrows it per RPC for calls that arrive without one. It is also the cap: a caller
    asking for more gets that much, so no internal call outlives the grace internal
    connections give their calls past their maximum age."""
    longest = gateway.server_deadline_s
    return replace(
        settings, default_deadline_s=longest, longest_deadline_s=longest, max_deadline_s=longest
    )


def build_server(
    settings: ServerSettings,
    gateway: GatewaySettings,
    telemetry: Telemetry,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, GatewayServicer]:
    """The server with the servicer registered and its quota gate in front of every
    other interceptor (a refusal must not pay for tracing or logging); not started."""
    gate = QuotaGate(gpb.DESCRIPTOR.services_by_name["GatewayService"], telemetry.meter("tandem"))
    # The gateway's own port is the public face behind the edge: callers authenticate
    # with API keys, so it listens without TLS; ``trust`` signs tenants into its calls.
    server = GrpcServer(
        server_settings_for(settings, gateway),
        telemetry,
        first=[gate],
        options=UPLOAD_OPTIONS,
        accept_principal=False,
    )
    servicer = GatewayServicer(gate=gate, trust=trust)
    server.add_service(SERVICE_NAME, gpb_grpc.add_GatewayServiceServicer_to_server, servicer)
    return server, servicer


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    deps: GatewayDeps | None = None,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, GatewayServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once deps are attached."""
    gateway_settings = deps.settings if deps is not None else GatewaySettings()
    server, servicer = build_server(settings, gateway_settings, telemetry, trust=trust)
    if deps is not None:
        servicer.attach(deps)
    await server.start()
    return server, servicer


async def ready(server: GrpcServer, servicer: GatewayServicer, deps: GatewayDeps) -> None:
    """Attach the dependencies, then report SERVING."""
    servicer.attach(deps)
    await server.set_serving(True)
    _log.info("ready", extra={"fields": {"port": server.port}})


def open_channels(
    settings: GatewaySettings, telemetry: Telemetry, trust: Trust | None = None
) -> tuple[grpc.aio.Channel, grpc.aio.Channel, grpc.aio.Channel]:
    """Router, retrieval and SQL channels with tracing, retries and deadline propagation
    (mutual TLS and the caller's signed tenant with ``trust`` secure)."""
    interceptors = telemetry.client_interceptors()
    return (
        create_channel(settings.router_addr, interceptors=interceptors, trust=trust, peer="router"),
        create_channel(
            settings.retrieval_addr,
            interceptors=interceptors,
            trust=trust,
            peer="retrieval",
            # an uploaded file travels whole to retrieval (UploadDocument)
            max_message_bytes=internal_message_bytes(
                settings.limits.max_upload_bytes, ServerSettings.max_message_bytes
            ),
        ),
        create_channel(settings.sql_addr, interceptors=interceptors, trust=trust, peer="sql"),
    )


async def run_until_signalled() -> None:
    """Process entry point: bind, open and migrate the key store, serve until SIGTERM."""
    telemetry_settings = TelemetrySettings.from_env("gateway")
    configure_logging("gateway", telemetry_settings.log_level)
    settings = GatewaySettings.from_env()
    server_settings = ServerSettings.from_env("gateway", DEFAULT_PORT)
    db_settings = DatabaseSettings.from_env()
    pepper = key_pepper()
    trust = Trust.from_env("gateway")
    telemetry = Telemetry(telemetry_settings)
    server, servicer = build_server(server_settings, settings, telemetry, trust=trust)
    router, retrieval, sql = open_channels(settings, telemetry, trust)
    opened: list[Database | ConversationStore | KeyChanges | AuditLog] = []

    async def start() -> None:
        url = await asyncio.to_thread(resolve_url, db_settings)
        database = Database(
            url,
            min_size=db_settings.pool_min_size,
            max_size=db_settings.pool_max_size,
            timeout_s=db_settings.connect_timeout_s,
            vector=False,
        )
        await database.open(migrations())
        opened.append(database)
        conversations: ConversationStore | None = None
        if settings.conversations:
            conversations = ConversationStore(
                Database(
                    app_conninfo(url, settings.conversation_app_database_url),
                    owner_conninfo=url,
                    min_size=1,
                    max_size=db_settings.pool_max_size,
                    timeout_s=db_settings.connect_timeout_s,
                    vector=False,
                ),
                retention_days=settings.conversation_retention_days,
            )
            await conversations.open()
            opened.append(conversations)
        keys = ApiKeys(
            database,
            pepper,
            cache_ttl_s=settings.key_cache_ttl_s,
            outage_grace_s=settings.key_outage_grace_s,
        )
        audit: AuditLog | None = None
        if settings.audit.enabled:
            audit = AuditLog(
                Database(
                    audit_conninfo(url, settings.audit.app_database_url),
                    owner_conninfo=url,
                    min_size=1,
                    max_size=2,
                    timeout_s=db_settings.connect_timeout_s,
                    vector=False,
                ),
                settings.audit,
                meter=telemetry.meter("tandem"),
                recent_tenant=keys.recent_tenant,
            )
            await audit.start()
            opened.append(audit)
        if settings.key_cache_ttl_s > 0:
            changes = KeyChanges(url, keys.forget, on_lost=keys.lost)
            await changes.start()
            opened.append(changes)
            keys.listen(changes.caught_up)
        deps = GatewayDeps(
            settings=settings,
            keys=keys,
            quota=TokenBuckets(settings.rate_per_s, settings.burst),
            router_channel=router,
            retrieval_channel=retrieval,
            sql_channel=sql,
            conversations=conversations,
            audit=audit,
        )
        await ready(server, servicer, deps)
        server.watch_dependencies({"postgres": database.ping})

    async def stop() -> None:
        for channel in (router, retrieval, sql):
            await channel.close()
        for resource in reversed(opened):
            await resource.close()

    await serve(server, on_start=start, on_stop=stop)
