"""The tools an agent sees: their input and output schemas, how arguments become gateway
requests, and how replies become structured content (answer, citations with locators,
SQL, bounded rows, the chart's Vega-Lite spec) plus a short text rendering for clients
that show text only. Transport-free: the server module wires these to MCP."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.mcp._gateway import Credentials, GatewayClient, GatewayError
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

# The modes a tool takes, by the protos' own names ("auto", "hybrid", ...): a mode added
# to the protos is offered without an edit here.
ASK_MODES = {
    name.removeprefix("ASK_MODE_").lower(): value
    for name, value in qpb.AskMode.items()
    if value != qpb.ASK_MODE_UNSPECIFIED
}
SEARCH_MODES = {
    name.removeprefix("SEARCH_MODE_").lower(): value
    for name, value in rpb.SearchMode.items()
    if value != rpb.SEARCH_MODE_UNSPECIFIED
}
TEACH_TOOL = "teach_sql"
# A search hit's text handed to an agent: a snippet, not the whole chunk.
SNIPPET_CHARS = 500

Json = dict[str, Any]


class ToolInputError(ValueError):
    """An argument the tool cannot use; the message names it (INVALID_ARGUMENT)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"INVALID_ARGUMENT: field {field}: {problem}")


@dataclass(frozen=True)
class Result:
    """A tool's structured content and its short text rendering."""

    structured: Json
    text: str


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Json
    output_schema: Json
    run: Callable[[Tools, Mapping[str, Any], Credentials], Awaitable[Result]]


# -- schemas ---------------------------------------------------------------------------

_STR = {"type": "string"}
_ROWS = {
    "columns": {"type": "array", "items": _STR},
    "rows": {"type": "array", "items": {"type": "array"}},
    "row_count": {"type": "integer", "description": "rows the statement returned"},
    "truncated": {"type": "boolean", "description": "rows were left out (here or by the engine)"},
    "chart": {
        "type": ["object", "null"],
        "description": "the result's chart as a Vega-Lite v5 spec (data inlined); null if none",
    },
}
_SQL_RESULT = {
    "type": "object",
    "properties": {"sql": _STR, "database": _STR, **_ROWS},
    "required": ["sql", "database", "columns", "rows", "row_count", "truncated", "chart"],
}
_CITATION = {
    "type": "object",
    "properties": {
        "kind": _STR,
        "document_id": _STR,
        "title": _STR,
        "uri": _STR,
        "section": _STR,
        "locator": {"type": "string", "description": "where in the document: section or chunk"},
        "quote": _STR,
    },
    "required": ["kind", "document_id", "locator", "quote"],
}


def _object(properties: Json, required: Sequence[str] = ()) -> Json:
    return {"type": "object", "properties": properties, "required": list(required)}


ASK_INPUT = _object(
    {
        "question": {"type": "string", "description": "the question, in plain words"},
        "mode": {
            "type": "string",
            "enum": list(ASK_MODES),
            "default": "auto",
            "description": "auto: plan; retrieve: one search; agentic: RAG loop; sql",
        },
        "database": {"type": "string", "description": "SQL database (default: the default)"},
        "conversation_id": {
            "type": "string",
            "description": "continue this conversation (from an earlier answer)",
        },
    },
    ["question"],
)
ASK_OUTPUT = _object(
    {
        "answer": _STR,
        "outcome": _STR,
        "degraded": {"type": "boolean"},
        "conversation_id": _STR,
        "answer_id": _STR,
        "citations": {"type": "array", "items": _CITATION},
        "sql_results": {"type": "array", "items": _SQL_RESULT},
    },
    ["answer", "outcome", "degraded", "conversation_id", "answer_id", "citations", "sql_results"],
)
SEARCH_INPUT = _object(
    {
        "query": _STR,
        "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        "mode": {"type": "string", "enum": list(SEARCH_MODES), "default": "hybrid"},
    },
    ["query"],
)
SEARCH_OUTPUT = _object(
    {
        "hits": {
            "type": "array",
            "items": _object(
                {
                    "document_id": _STR,
                    "title": _STR,
                    "uri": _STR,
                    "section": _STR,
                    "chunk_id": _STR,
                    "snippet": _STR,
                    "score": {"type": "number"},
                },
                ["document_id", "chunk_id", "snippet", "score"],
            ),
        },
        "degraded": {"type": "boolean"},
        "mode": _STR,
    },
    ["hits", "degraded", "mode"],
)
ASK_SQL_INPUT = _object(
    {"question": _STR, "database": {"type": "string", "description": "default: the default"}},
    ["question"],
)
ASK_SQL_OUTPUT = _object(
    {
        "outcome": _STR,
        "message": _STR,
        "refusal_reason": _STR,
        "answer_id": _STR,
        "interpretation": _STR,
        "result": {"anyOf": [_SQL_RESULT, {"type": "null"}]},
    },
    ["outcome", "message", "refusal_reason", "answer_id", "result"],
)
LIST_DATABASES_OUTPUT = _object(
    {
        "databases": {
            "type": "array",
            "items": _object(
                {"name": _STR, "default": {"type": "boolean"}, "tables": {"type": "array"}},
                ["name", "default", "tables"],
            ),
        }
    },
    ["databases"],
)
DESCRIBE_INPUT = _object({"database": {"type": "string", "description": "default: the default"}})
DESCRIBE_OUTPUT = _object(
    {
        "database": _STR,
        "catalog_text": _STR,
        "truncated": {"type": "boolean"},
        "tables": {
            "type": "array",
            "items": _object(
                {
                    "schema": _STR,
                    "name": _STR,
                    "comment": _STR,
                    "columns": {"type": "array", "items": {"type": "object"}},
                },
                ["name", "columns"],
            ),
        },
    },
    ["database", "catalog_text", "truncated", "tables"],
)
TEACH_INPUT = _object(
    {
        "question": _STR,
        "sql": {"type": "string", "description": "the read-only statement that answers it"},
        "database": {"type": "string", "description": "default: the default"},
    },
    ["question", "sql"],
)
TEACH_OUTPUT = _object(
    {"pair_id": _STR, "database": _STR, "question": _STR, "sql": _STR},
    ["pair_id", "database", "question", "sql"],
)


# -- arguments -------------------------------------------------------------------------


def _text(args: Mapping[str, Any], name: str, *, required: bool = False) -> str:
    value = args.get(name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ToolInputError(name, "must be a string")
    if required and not value.strip():
        raise ToolInputError(name, "is required")
    return value


def _choice(args: Mapping[str, Any], name: str, choices: Mapping[str, int], default: str) -> int:
    value = _text(args, name) or default
    if value not in choices:
        raise ToolInputError(name, f"must be one of {', '.join(choices)}")
    return choices[value]


def _int(args: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolInputError(name, f"must be an integer from {low} to {high}")
    return value


# -- results ---------------------------------------------------------------------------


def _value(value: cpb.SqlValue) -> Any:
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return None
    if kind == "timestamp_value":
        return value.timestamp_value.ToDatetime().isoformat()
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def _chart(result: spb.SqlResult) -> Json | None:
    if not result.chart.vega_lite:
        return None
    spec = json.loads(result.chart.vega_lite)
    return spec if isinstance(spec, dict) else None


def _sql_result(result: spb.SqlResult, max_rows: int) -> Json:
    rows = [[_value(v) for v in row.values] for row in result.rows[:max_rows]]
    return {
        "sql": result.sql,
        "database": result.database,
        "columns": [c.name for c in result.columns],
        "rows": rows,
        "row_count": result.row_count,
        "truncated": result.truncated or len(result.rows) > max_rows,
        "chart": _chart(result),
    }


def _citation(citation: cpb.Citation) -> Json:
    kind = cpb.CitationKind.Name(citation.kind).removeprefix("CITATION_KIND_").lower()
    return {
        "kind": kind,
        "document_id": citation.document_id,
        "title": citation.title,
        "uri": citation.uri,
        "section": citation.section,
        "locator": citation.section or citation.chunk_id or citation.sql_fingerprint,
        "quote": citation.quote,
    }


def _table_text(result: Json) -> str:
    lines = [result["sql"], " | ".join(result["columns"])]
    lines += [" | ".join("" if v is None else str(v) for v in row) for row in result["rows"][:10]]
    if result["row_count"] > min(10, len(result["rows"])):
        lines.append(f"({result['row_count']} rows)")
    return "\n".join(lines)


# -- the tools -------------------------------------------------------------------------


class Tools:
    """Each tool's call: arguments checked, one gateway call, the reply shaped."""

    def __init__(self, gateway: GatewayClient, max_rows: int, databases: Sequence[str]) -> None:
        self._gateway = gateway
        self._max_rows = max_rows
        self._databases = tuple(databases)

    async def ask(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        request = gpb.GatewayServiceAskRequest(
            question=_text(args, "question", required=True),
            mode=_choice(args, "mode", ASK_MODES, "auto"),  # type: ignore[arg-type]
            options=qpb.AskOptions(database=_text(args, "database")),
            conversation_id=_text(args, "conversation_id"),
        )
        answer = (await self._gateway.ask(request, creds)).answer
        citations = [_citation(c) for c in answer.citations]
        results = [_sql_result(r.result, self._max_rows) for r in answer.sql_results]
        out = {
            "answer": answer.text,
            "outcome": qpb.AnswerOutcome.Name(answer.outcome).removeprefix("ANSWER_OUTCOME_"),
            "degraded": answer.degraded,
            "conversation_id": answer.conversation_id,
            "answer_id": answer.answer_id,
            "citations": citations,
            "sql_results": results,
        }
        text = [answer.text]
        text += [
            f"[{i}] {c['title'] or c['document_id']} — {c['locator']}"
            for i, c in enumerate(citations, 1)
        ]
        text += [_table_text(r) for r in results]
        return Result(out, "\n".join(t for t in text if t))

    async def search(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        request = gpb.GatewayServiceSearchRequest(
            query=_text(args, "query", required=True),
            top_k=_int(args, "top_k", 10, 1, 100),
            mode=_choice(args, "mode", SEARCH_MODES, "hybrid"),  # type: ignore[arg-type]
        )
        reply = await self._gateway.search(request, creds)
        hits = [
            {
                "document_id": h.document_id,
                "title": h.title,
                "uri": h.uri,
                "section": h.section,
                "chunk_id": h.chunk_id,
                "snippet": " ".join(h.text.split())[:SNIPPET_CHARS],
                "score": h.score,
            }
            for h in reply.hits
        ]
        out = {
            "hits": hits,
            "degraded": reply.degraded,
            "mode": rpb.SearchMode.Name(reply.mode).removeprefix("SEARCH_MODE_").lower(),
        }
        text = [
            f"{i}. {h['title'] or h['document_id']} ({h['section']}) {h['score']:.3f}"
            for i, h in enumerate(hits, 1)
        ]
        return Result(out, "\n".join(text) or "No hits.")

    async def ask_sql(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        request = gpb.GatewayServiceAskSqlRequest(
            question=_text(args, "question", required=True), database=_text(args, "database")
        )
        reply = await self._gateway.ask_sql(request, creds)
        answered = reply.outcome == spb.SQL_ASK_OUTCOME_ANSWERED
        result = _sql_result(reply.result, self._max_rows) if answered else None
        out = {
            "outcome": spb.SqlAskOutcome.Name(reply.outcome).removeprefix("SQL_ASK_OUTCOME_"),
            "message": reply.message,
            "refusal_reason": reply.refusal_reason,
            "answer_id": reply.answer_id,
            "interpretation": reply.interpretation,
            "result": result,
        }
        text = _table_text(result) if result else f"{out['outcome']}: {reply.message}"
        return Result(out, text)

    async def _describe(self, database: str, creds: Credentials, **extra: Any) -> Any:
        request = gpb.GatewayServiceDescribeSchemaRequest(database=database, **extra)
        return await self._gateway.describe_schema(request, creds)

    async def list_databases(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        default = await self._describe("", creds)
        found = [{"name": default.database, "default": True, "tables": _names(default)}]
        for name in self._databases:
            if name == default.database:
                continue
            try:
                reply = await self._describe(name, creds)
            except GatewayError as exc:
                if exc.code in ("INVALID_ARGUMENT", "PERMISSION_DENIED"):
                    continue  # unknown, or not this key's: not listed
                raise
            found.append({"name": reply.database, "default": False, "tables": _names(reply)})
        text = "\n".join(
            f"{d['name']}{' (default)' if d['default'] else ''}: {', '.join(d['tables'])}"
            for d in found
        )
        return Result({"databases": found}, text)

    async def describe_schema(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        reply = await self._describe(_text(args, "database"), creds)
        tables = [
            {
                "schema": t.schema_name,
                "name": t.name,
                "comment": t.comment,
                "columns": [
                    {
                        "name": c.name,
                        "type": c.data_type,
                        "nullable": c.nullable,
                        "comment": c.comment,
                    }
                    for c in t.columns
                ],
            }
            for t in reply.tables
        ]
        out = {
            "database": reply.database,
            "catalog_text": reply.catalog_text,
            "truncated": reply.truncated,
            "tables": tables,
        }
        return Result(out, reply.catalog_text)

    async def teach_sql(self, args: Mapping[str, Any], creds: Credentials) -> Result:
        request = gpb.GatewayServiceTeachSqlRequest(
            question=_text(args, "question", required=True),
            sql=_text(args, "sql", required=True),
            database=_text(args, "database"),
        )
        pair = (await self._gateway.teach_sql(request, creds)).pair
        out = {
            "pair_id": pair.pair_id,
            "database": pair.database,
            "question": pair.question,
            "sql": pair.sql,
        }
        return Result(out, f"Taught pair {pair.pair_id} on {pair.database}.")


def _names(reply: gpb.GatewayServiceDescribeSchemaResponse) -> list[str]:
    return [f"{t.schema_name}.{t.name}" if t.schema_name else t.name for t in reply.tables]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "ask",
        "Answer a question over the company's documents and databases, with citations "
        "(document and section) and, for counts and figures, the SQL with its rows and chart.",
        ASK_INPUT,
        ASK_OUTPUT,
        Tools.ask,
    ),
    ToolSpec(
        "search",
        "Search the company's documents; returns the best passages with their locators.",
        SEARCH_INPUT,
        SEARCH_OUTPUT,
        Tools.search,
    ),
    ToolSpec(
        "ask_sql",
        "Answer a countable question with one read-only SQL statement: the SQL and its rows.",
        ASK_SQL_INPUT,
        ASK_SQL_OUTPUT,
        Tools.ask_sql,
    ),
    ToolSpec(
        "list_databases",
        "List the SQL databases this key may query, with their tables.",
        _object({}),
        LIST_DATABASES_OUTPUT,
        Tools.list_databases,
    ),
    ToolSpec(
        "describe_schema",
        "Describe a SQL database's tables and columns.",
        DESCRIBE_INPUT,
        DESCRIBE_OUTPUT,
        Tools.describe_schema,
    ),
    ToolSpec(
        TEACH_TOOL,
        "Teach a confirmed question→SQL pair, reused for similar questions (needs the key's "
        "teach scope).",
        TEACH_INPUT,
        TEACH_OUTPUT,
        Tools.teach_sql,
    ),
)
