"""The router's view of its two engines, and their gRPC implementations.

The logic programs against ``SearchTool`` / ``SqlTool``; the gRPC clients convert
protobuf to plain objects and turn downstream statuses into ``ToolError`` with the
ErrorInfo reason, so a step can tell a bad intent from an unreachable service.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import grpc
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2, status_pb2

from services.common.llm import SqlIntent
from services.router._types import Cell, Hit, SearchOutcome, SqlOutcome
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
    """Text-to-SQL and structured intents on a target database."""

    async def ask(
        self, tenant_id: str, database: str, question: str, *, max_rows: int
    ) -> SqlOutcome: ...

    async def run_intent(
        self, tenant_id: str, database: str, intent: SqlIntent, *, max_rows: int
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


def sql_outcome(result: spb.SqlResult, *, repairs: int = 0, degraded: bool = False) -> SqlOutcome:
    """Plain columns and cells plus the raw result (kept for the answer's sql_results)."""
    return SqlOutcome(
        columns=tuple(c.name for c in result.columns),
        rows=tuple(tuple(cell(v) for v in row.values) for row in result.rows),
        fingerprint=result.fingerprint,
        description=result.explanation or "tables: " + ", ".join(result.tables_used),
        raw=result,
        repairs=repairs,
        degraded=degraded,
    )


_OPS = {
    "eq": spb.FILTER_OPERATOR_EQUAL,
    "ne": spb.FILTER_OPERATOR_NOT_EQUAL,
    "gt": spb.FILTER_OPERATOR_GREATER,
    "gte": spb.FILTER_OPERATOR_GREATER_OR_EQUAL,
    "lt": spb.FILTER_OPERATOR_LESS,
    "lte": spb.FILTER_OPERATOR_LESS_OR_EQUAL,
    "contains": spb.FILTER_OPERATOR_CONTAINS,
}
_KINDS = {
    "count": spb.INTENT_KIND_COUNT,
    "list": spb.INTENT_KIND_LIST,
    "group_by": spb.INTENT_KIND_GROUP_BY,
    "top_n": spb.INTENT_KIND_TOP_N,
    "lookup": spb.INTENT_KIND_LOOKUP,
    "aggregate": spb.INTENT_KIND_AGGREGATE,
}
_FUNCTIONS = {
    "count": spb.AGGREGATE_FUNCTION_COUNT,
    "sum": spb.AGGREGATE_FUNCTION_SUM,
    "avg": spb.AGGREGATE_FUNCTION_AVG,
    "min": spb.AGGREGATE_FUNCTION_MIN,
    "max": spb.AGGREGATE_FUNCTION_MAX,
}


def _sql_value(value: str | int | float | bool) -> cpb.SqlValue:
    if isinstance(value, bool):
        return cpb.SqlValue(bool_value=value)
    if isinstance(value, int):
        return cpb.SqlValue(int_value=value)
    if isinstance(value, float):
        return cpb.SqlValue(double_value=value)
    return cpb.SqlValue(string_value=value)


def intent_to_proto(intent: SqlIntent) -> spb.SqlIntent:
    """The LLM layer's intent as the SQL service's structured intent."""
    message = spb.SqlIntent(
        kind=_KINDS[intent.kind.value],
        table=intent.table,
        columns=list(intent.columns),
        filters=[
            spb.IntentFilter(column=f.column, op=_OPS[f.op.value], values=[_sql_value(f.value)])
            for f in intent.filters
        ],
        group_by=[spb.IntentGroup(column=c) for c in intent.group_by],
        limit=intent.limit or 0,
    )
    if intent.aggregate is not None:
        message.aggregate_function = _FUNCTIONS[intent.aggregate.function.value]
        if intent.aggregate.column != "*":
            message.aggregate_column = intent.aggregate.column
    if intent.order_by:
        by_aggregate = intent.aggregate is not None and intent.order_by == intent.aggregate.alias
        message.order_by.append(
            spb.IntentOrder(
                column="" if by_aggregate else intent.order_by,
                descending=intent.direction.value == "desc",
                by_aggregate=by_aggregate,
            )
        )
    return message


class GrpcSqlTool:
    """SqlTool over SqlService.AskQuestion / RunIntent / ValidateSql."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = spb_grpc.SqlServiceStub(channel)

    async def ask(
        self, tenant_id: str, database: str, question: str, *, max_rows: int
    ) -> SqlOutcome:
        request = spb.AskQuestionRequest(
            tenant_id=tenant_id, database=database, question=question[:2000], max_rows=max_rows
        )
        response = await _call(lambda: self._stub.AskQuestion(request), "sql")
        if response.outcome != spb.SQL_ASK_OUTCOME_ANSWERED:
            reason = spb.SqlAskOutcome.Name(response.outcome).removeprefix("SQL_ASK_OUTCOME_")
            return SqlOutcome((), (), "", "", answered=False, reason=reason)
        return sql_outcome(response.result, repairs=response.repairs, degraded=response.degraded)

    async def run_intent(
        self, tenant_id: str, database: str, intent: SqlIntent, *, max_rows: int
    ) -> SqlOutcome:
        request = spb.RunIntentRequest(
            tenant_id=tenant_id,
            database=database,
            intent=intent_to_proto(intent),
            max_rows=max_rows,
        )
        response = await _call(lambda: self._stub.RunIntent(request), "sql")
        return sql_outcome(response.result)

    async def check_database(self, tenant_id: str, database: str) -> None:
        """Raises ToolError when the database is unknown or closed to the tenant."""
        request = spb.ValidateSqlRequest(tenant_id=tenant_id, database=database, sql="SELECT 1")
        await _call(lambda: self._stub.ValidateSql(request), "sql")


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A protobuf Struct as a plain dict."""
    result: dict[str, Any] = json_format.MessageToDict(struct)
    return result
