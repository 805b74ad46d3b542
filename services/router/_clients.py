"""The router's view of its two engines, and their gRPC implementations.

The logic programs against ``SearchTool`` / ``SqlTool``; the gRPC clients convert
protobuf to plain objects and turn downstream statuses into ``ToolError`` with the
ErrorInfo reason, so a step can tell a refused question from an unreachable service.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import grpc
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2, status_pb2

from services.router._types import Cell, Hit, SearchOutcome, SqlOutcome
from services.router.offline import BuildsOn, Relation
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import retrieval_service_pb2_grpc as rpb_grpc
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc


class ToolError(Exception):
    """A downstream call failed: its gRPC code and the ErrorInfo reason (metadata only)."""

    def __init__(self, code: grpc.StatusCode, reason: str, service: str) -> None:
        super().__init__(f"{service}: {code.name} {reason}")
        self.code = code
        self.reason = reason
        self.service = service


class SearchTool(Protocol):
    """Hybrid search over the tenant's documents."""

    async def search(
        self,
        tenant_id: str,
        query: str,
        *,
        top_k: int,
        mode: int = 0,
        categories: tuple[str, ...] = (),
        document_ids: tuple[str, ...] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> SearchOutcome: ...


class SqlTool(Protocol):
    """Text-to-SQL on a target database: the SQL service links and answers questions."""

    async def ask(
        self,
        tenant_id: str,
        database: str,
        question: str,
        *,
        max_rows: int,
        prior: BuildsOn | None = None,
    ) -> SqlOutcome: ...

    async def check_database(self, tenant_id: str, database: str) -> None: ...


def error_reason(error: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason from a rich status, or the code's name."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    code: grpc.StatusCode = error.code()
    return code.name


async def _call(make: Callable[[], Any], service: str) -> Any:
    """Make and await a unary call (a cancelled step cancels its RPC: ``create_channel``)."""
    try:
        return await make()
    except grpc.aio.AioRpcError as exc:
        raise _tool_error(exc, service) from None


def _tool_error(error: grpc.aio.AioRpcError, service: str) -> ToolError:
    return ToolError(error.code(), error_reason(error), service)


class GrpcSearchTool:
    """SearchTool over RetrievalService.Search."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = rpb_grpc.RetrievalServiceStub(channel)

    async def search(
        self,
        tenant_id: str,
        query: str,
        *,
        top_k: int,
        mode: int = 0,
        categories: tuple[str, ...] = (),
        document_ids: tuple[str, ...] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> SearchOutcome:
        search_filter = rpb.SearchFilter(categories=categories, document_ids=document_ids)
        if metadata:
            struct = struct_pb2.Struct()
            struct.update(dict(metadata))
            search_filter.metadata.CopyFrom(struct)
        request = rpb.SearchRequest(
            tenant_id=tenant_id,
            query=query[:2000],
            mode=mode,  # type: ignore[arg-type]
            top_k=top_k,
            filter=search_filter,
        )
        response = await _call(lambda: self._stub.Search(request), "retrieval")
        hits = tuple(
            Hit(
                chunk_id=h.chunk_id,
                document_id=h.document_id,
                title=h.title,
                uri=h.uri,
                section=h.section,
                text=h.text,
                score=h.score,
            )
            for h in response.hits
        )
        reason = ""
        if response.degraded and response.degradations:
            reason = cpb.DegradationReason.Name(response.degradations[0].reason).removeprefix(
                "DEGRADATION_REASON_"
            )
        return SearchOutcome(hits, degraded=response.degraded, reason=reason)


def cell(value: cpb.SqlValue) -> Cell:
    """A SQL value as a plain cell for synthesis (decimals kept as exact text)."""
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "timestamp_value":
        return value.timestamp_value.ToDatetime().isoformat()
    if kind == "array_value":
        return ", ".join(str(cell(v)) for v in value.array_value.values)
    if kind == "bytes_value":
        return f"<{len(value.bytes_value)} bytes>"
    result: Cell = getattr(value, kind)
    return result


def sql_outcome(
    result: spb.SqlResult, *, repairs: int = 0, degraded: bool = False, answer_id: str = ""
) -> SqlOutcome:
    """Plain columns and cells plus the raw result (kept for the answer's sql_results)."""
    return SqlOutcome(
        columns=tuple(c.name for c in result.columns),
        rows=tuple(tuple(cell(v) for v in row.values) for row in result.rows),
        fingerprint=result.fingerprint,
        description=result.explanation or "tables: " + ", ".join(result.tables_used),
        raw=result,
        repairs=repairs,
        degraded=degraded,
        answer_id=answer_id,
    )


_RELATIONS = {
    Relation.RESULT_SET: spb.PRIOR_RELATION_RESULT_SET,
    Relation.ROW_LIMIT: spb.PRIOR_RELATION_ROW_LIMIT,
    Relation.REGROUP: spb.PRIOR_RELATION_REGROUP,
    Relation.VALUE_SWAP: spb.PRIOR_RELATION_VALUE_SWAP,
    Relation.FILTER: spb.PRIOR_RELATION_FILTER,
    Relation.TIME_SHIFT: spb.PRIOR_RELATION_TIME_SHIFT,
}


class GrpcSqlTool:
    """SqlTool over SqlService.AskQuestion / ValidateSql."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = spb_grpc.SqlServiceStub(channel)

    async def ask(
        self,
        tenant_id: str,
        database: str,
        question: str,
        *,
        max_rows: int,
        prior: BuildsOn | None = None,
    ) -> SqlOutcome:
        request = spb.AskQuestionRequest(
            tenant_id=tenant_id, database=database, question=question[:2000], max_rows=max_rows
        )
        if prior is not None and prior.relation:
            request.prior.CopyFrom(
                spb.PriorStatement(
                    sql=prior.sql,
                    relation=_RELATIONS[prior.relation],
                    limit=prior.limit,
                    ascending=prior.ascending,
                    dimension=prior.dimension[:200],
                    value=prior.value[:200],
                    add=prior.add,
                    condition=prior.condition[:200],
                    exclude=prior.exclude,
                    remove=prior.remove,
                    period=prior.period[:200],
                )
            )
        response = await _call(lambda: self._stub.AskQuestion(request), "sql")
        if response.outcome != spb.SQL_ASK_OUTCOME_ANSWERED:
            # Why it declined (LANGUAGE_UNSUPPORTED, SQL_READ_ONLY) where it said, else
            # the outcome (UNANSWERABLE, ATTEMPTS_EXHAUSTED).
            reason = response.refusal_reason or spb.SqlAskOutcome.Name(
                response.outcome
            ).removeprefix("SQL_ASK_OUTCOME_")
            return SqlOutcome(
                (), (), "", "", answered=False, reason=reason, message=response.message[:500]
            )
        return sql_outcome(
            response.result,
            repairs=response.repairs,
            degraded=response.degraded,
            answer_id=response.answer_id,
        )

    async def check_database(self, tenant_id: str, database: str) -> None:
        """Raises ToolError when the database is unknown or closed to the tenant."""
        request = spb.ValidateSqlRequest(tenant_id=tenant_id, database=database, sql="SELECT 1")
        await _call(lambda: self._stub.ValidateSql(request), "sql")


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A protobuf Struct as a plain dict."""
    result: dict[str, Any] = json_format.MessageToDict(struct)
    return result
