"""Edge validation of every public request: required fields, sizes, ranges and enums.

Violations name the field by its path in the gateway request (``options.top_k``,
``intent.filters[0].op``) and are raised together as one INVALID_ARGUMENT with a
BadRequest. The internal services validate again (defence in depth); these checks make
sure nothing oversized or malformed crosses the gateway.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from gateway._settings import Limits
from services.common import FieldViolation, InvalidArgument, control_character_violations
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb

REQUIRED = "FIELD_REQUIRED"
TOO_LONG = "FIELD_TOO_LONG"
OUT_OF_RANGE = "OUT_OF_RANGE"
UNKNOWN_ENUM = "UNKNOWN_ENUM_VALUE"
BATCH_TOO_LARGE = "BATCH_TOO_LARGE"
INVALID_CHARACTER = "INVALID_CHARACTER"
# Free text: these fields (at any depth) may hold tab, line and page breaks; every other
# string field of a public request holds no control character at all (services.common).
FREE_TEXT = frozenset(
    {"question", "query", "instructions", "note", "sql", "corrected_sql", "text", "string_value"}
)
# Bidirectional overrides and isolates: text holding them displays in another order than
# it reads (a question stored as a conversation title, a taught pair's question), so no
# field that a listing may show accepts them.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class _Checks:
    """Collects violations; the first one's reason becomes the error's reason."""

    def __init__(self) -> None:
        self.violations: list[tuple[FieldViolation, str]] = []

    def add(self, field: str, description: str, reason: str) -> None:
        self.violations.append((FieldViolation(field, description), reason))

    def text(self, field: str, value: str, limit: int, *, required: bool = False) -> None:
        if required and not value.strip():
            self.add(field, "is required", REQUIRED)
        elif len(value) > limit:
            self.add(field, f"must be at most {limit} characters, got {len(value)}", TOO_LONG)
        elif not _BIDI_CONTROLS.isdisjoint(value):
            self.add(
                field,
                "must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)",
                INVALID_CHARACTER,
            )

    def characters(self, message: Message, *, skip: Collection[str] = ()) -> None:
        """Flag control characters in every string field of ``message`` (NUL included:
        Postgres text cannot hold it), so none travels on to be stored or searched, and
        the error names the field, not wherever the value first met the database."""
        for violation in control_character_violations(message, free_text=FREE_TEXT, skip=skip):
            self.violations.append((violation, INVALID_CHARACTER))

    def count(self, field: str, value: int, low: int, high: int) -> None:
        if not low <= value <= high:
            self.add(field, f"must be between {low} and {high}, got {value}", OUT_OF_RANGE)

    def names(self, field: str, values: Iterable[str], limit: int, most: int) -> None:
        items = list(values)
        if len(items) > most:
            self.add(field, f"must hold at most {most} entries, got {len(items)}", OUT_OF_RANGE)
            return
        for i, value in enumerate(items):
            self.text(f"{field}[{i}]", value, limit, required=True)

    def enums(self, message: Message, prefix: str = "", *, skip: Iterable[str] = ()) -> None:
        """Flag enum values the contract does not define, anywhere in ``message``.

        proto3 enums are open, so an unknown number parses fine; it must not travel on.
        """
        skipped = set(skip)
        # Any: the descriptor stubs type enum_type/message_type as optional.
        fields: list[Any] = list(message.DESCRIPTOR.fields)
        for field in fields:
            if field.name in skipped:
                continue
            path = f"{prefix}{field.name}"
            repeated = bool(field.is_repeated)
            value = getattr(message, field.name)
            if field.type == FieldDescriptor.TYPE_ENUM:
                known = field.enum_type.values_by_number
                numbers = list(value) if repeated else [value]
                for i, number in enumerate(numbers):
                    if number not in known:
                        where = f"{path}[{i}]" if repeated else path
                        message_text = f"unknown {field.enum_type.name} value {number}"
                        self.add(where, message_text, UNKNOWN_ENUM)
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                if field.message_type.file.package.startswith("google."):
                    continue
                if field.message_type.GetOptions().map_entry:
                    continue
                if repeated:
                    for i, item in enumerate(value):
                        self.enums(item, f"{path}[{i}].")
                elif message.HasField(field.name):
                    self.enums(value, f"{path}.")

    def raise_if_any(self) -> None:
        if self.violations:
            raise InvalidArgument([v for v, _ in self.violations], reason=self.violations[0][1])


def _options(checks: _Checks, options: qpb.AskOptions, limits: Limits) -> None:
    checks.count("options.top_k", options.top_k, 0, limits.max_ask_top_k)
    checks.count("options.max_tool_calls", options.max_tool_calls, 0, limits.max_tool_calls)
    checks.count("options.max_rows", options.max_rows, 0, limits.max_rows)
    checks.text("options.database", options.database, limits.max_name_chars)
    _filter(checks, "options.search_filter", options.search_filter, limits)


def _filter(checks: _Checks, prefix: str, search_filter: rpb.SearchFilter, limits: Limits) -> None:
    checks.names(
        f"{prefix}.document_ids", search_filter.document_ids, limits.max_name_chars,
        limits.max_filter_ids,
    )  # fmt: skip
    checks.names(
        f"{prefix}.categories", search_filter.categories, limits.max_name_chars,
        limits.max_filter_values,
    )  # fmt: skip


def check_ask(
    request: gpb.GatewayServiceAskRequest | gpb.GatewayServiceStreamAskRequest, limits: Limits
) -> None:
    checks = _Checks()
    checks.text("question", request.question, limits.max_question_chars, required=True)
    # The shape (a UUID) is checked where the id is parsed, with the same field name.
    checks.text("conversation_id", request.conversation_id, limits.max_name_chars)
    _options(checks, request.options, limits)
    checks.enums(request)
    checks.characters(request)
    checks.raise_if_any()


def check_search(request: gpb.GatewayServiceSearchRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("query", request.query, limits.max_query_chars, required=True)
    checks.count("top_k", request.top_k, 0, limits.max_search_top_k)
    checks.count("candidate_depth", request.candidate_depth, 0, limits.max_candidate_depth)
    checks.count("ef_search", request.ef_search, 0, limits.max_ef_search)
    if not math.isfinite(request.min_score) or request.min_score < 0:
        checks.add("min_score", "must be a finite number >= 0", OUT_OF_RANGE)
    _filter(checks, "filter", request.filter, limits)
    checks.enums(request)
    checks.characters(request)
    checks.raise_if_any()


def check_ask_sql(request: gpb.GatewayServiceAskSqlRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.text("question", request.question, limits.max_sql_question_chars, required=True)
    checks.count("max_rows", request.max_rows, 0, limits.max_rows)
    checks.text("instructions", request.instructions, limits.max_sql_instructions_chars)
    checks.characters(request)
    checks.raise_if_any()


def check_run_intent(request: gpb.GatewayServiceRunSqlIntentRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.count("max_rows", request.max_rows, 0, limits.max_rows)
    if not request.HasField("intent"):
        checks.add("intent", "is required", REQUIRED)
    else:
        intent = request.intent
        if intent.kind == 0:
            checks.add("intent.kind", "is required", REQUIRED)
        checks.text("intent.table", intent.table, limits.max_name_chars, required=True)
        checks.names("intent.join_tables", intent.join_tables, limits.max_name_chars, 16)
        checks.names("intent.columns", intent.columns, limits.max_name_chars, 100)
        checks.count("intent.limit", intent.limit, 0, limits.max_rows)
        checks.text("intent.aggregate_column", intent.aggregate_column, limits.max_name_chars)
        if len(intent.filters) > limits.max_filter_values:
            checks.add(
                "intent.filters", f"must hold at most {limits.max_filter_values} entries",
                OUT_OF_RANGE,
            )  # fmt: skip
        for i, item in enumerate(intent.filters):
            checks.text(f"intent.filters[{i}].column", item.column, limits.max_name_chars,
                        required=True)  # fmt: skip
            if len(item.values) > limits.max_filter_ids:
                checks.add(
                    f"intent.filters[{i}].values",
                    f"must hold at most {limits.max_filter_ids} values", OUT_OF_RANGE,
                )  # fmt: skip
        checks.enums(request)
    checks.characters(request)
    checks.raise_if_any()


def check_validate_sql(request: gpb.GatewayServiceValidateSqlRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.text("sql", request.sql, limits.max_sql_chars, required=True)
    checks.characters(request)
    checks.raise_if_any()


def check_ingest(request: gpb.GatewayServiceIngestDocumentsRequest, limits: Limits) -> None:
    """Batch-level checks only: a problem inside one document fails that document alone
    (the retrieval service reports it in the document's result)."""
    checks = _Checks()
    if not request.documents:
        checks.add("documents", "at least one document is required", REQUIRED)
    elif len(request.documents) > limits.max_batch_documents:
        checks.add(
            "documents",
            f"at most {limits.max_batch_documents} documents per call, got "
            f"{len(request.documents)}; split the batch",
            BATCH_TOO_LARGE,
        )
    checks.enums(request, skip=("documents",))
    checks.characters(request, skip=("documents",))
    checks.raise_if_any()


def check_delete(request: gpb.GatewayServiceDeleteDocumentRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("document_id", request.document_id, limits.max_name_chars, required=True)
    checks.characters(request)
    checks.raise_if_any()


# A document ACL's lists (RetrievalService.UpdateDocumentAcl enforces the same).
MAX_ACL_ENTRIES = 256
MAX_ACL_NAME_CHARS = 256


def check_update_acl(request: gpb.GatewayServiceUpdateDocumentAclRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("document_id", request.document_id, limits.max_name_chars, required=True)
    checks.names("acl.principals", request.acl.principals, MAX_ACL_NAME_CHARS, MAX_ACL_ENTRIES)
    checks.names("acl.groups", request.acl.groups, MAX_ACL_NAME_CHARS, MAX_ACL_ENTRIES)
    checks.characters(request)
    checks.raise_if_any()


def check_describe(request: gpb.GatewayServiceDescribeSchemaRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.text("question", request.question, limits.max_sql_question_chars)
    checks.count("max_chars", request.max_chars, 0, limits.max_catalog_chars)
    checks.names("tables", request.tables, limits.max_name_chars, limits.max_tables)
    checks.characters(request)
    checks.raise_if_any()


# The answer memory: sizes and enums here; UUIDs, the gate and ownership in the SQL service.
MAX_NOTE_CHARS = 500
MAX_PAGE_SIZE = 1000


def check_sql_feedback(request: gpb.GatewayServiceSubmitSqlFeedbackRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("answer_id", request.answer_id, limits.max_name_chars, required=True)
    if request.rating == 0:
        checks.add("rating", "is required", REQUIRED)
    checks.text("corrected_sql", request.corrected_sql, limits.max_sql_chars)
    checks.text("note", request.note, MAX_NOTE_CHARS)
    checks.enums(request)
    checks.characters(request)
    checks.raise_if_any()


def check_teach_sql(request: gpb.GatewayServiceTeachSqlRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.text("question", request.question, limits.max_sql_question_chars, required=True)
    checks.text("sql", request.sql, limits.max_sql_chars, required=True)
    checks.characters(request)
    checks.raise_if_any()


def check_list_pairs(request: gpb.GatewayServiceListConfirmedPairsRequest, limits: Limits) -> None:
    checks = _Checks()
    checks.text("database", request.database, limits.max_name_chars)
    checks.count("page_size", request.page_size, 0, MAX_PAGE_SIZE)
    checks.text("page_token", request.page_token, limits.max_name_chars)
    checks.characters(request)
    checks.raise_if_any()


def check_delete_pair(
    request: gpb.GatewayServiceDeleteConfirmedPairRequest, limits: Limits
) -> None:
    checks = _Checks()
    checks.text("pair_id", request.pair_id, limits.max_name_chars, required=True)
    checks.characters(request)
    checks.raise_if_any()


def check_list_conversations(
    request: gpb.GatewayServiceListConversationsRequest, limits: Limits
) -> None:
    checks = _Checks()
    checks.count("page_size", request.page_size, 0, MAX_PAGE_SIZE)
    checks.text("page_token", request.page_token, limits.max_name_chars)
    checks.characters(request)
    checks.raise_if_any()


def check_list_audit_events(
    request: gpb.GatewayServiceListAuditEventsRequest, limits: Limits
) -> None:
    """The shape of the request; which RPC, outcome and token are meaningful is
    ``gateway._audit.parse_query``'s to say."""
    checks = _Checks()
    checks.count("page_size", request.page_size, 0, MAX_PAGE_SIZE)
    checks.text("page_token", request.page_token, limits.max_name_chars)
    for name in ("principal_id", "key_id", "rpc", "outcome"):
        checks.text(name, getattr(request, name), limits.max_name_chars)
    checks.characters(request)
    checks.raise_if_any()
