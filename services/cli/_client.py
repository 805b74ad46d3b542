"""``tandem ask | search | sql | ingest | keys``: the gateway's command-line client.

Every command but ``keys`` talks to the gateway over gRPC (``TANDEM_GATEWAY``, default
127.0.0.1:50051) with an API key (``--api-key`` or ``TANDEM_API_KEY``). ``keys`` manages
keys directly in the gateway's database (``DATABASE_URL`` or the embedded server), as an
operator does. Errors print the status, the offending field and when to retry; never a
traceback.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import grpc
from google.protobuf import json_format
from grpc_status import rpc_status

from services.cli import _sql_memory
from services.cli._plumbing import (
    CliError,
    as_ms,
    call_metadata,
    common_arguments,
    enum_name,
    gateway_stub,
    handled,
    print_json,
    timings_text,
)
from services.common.formats import extracted_suffixes, formats_phrase, suffixes
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

if TYPE_CHECKING:
    from services.cli._main import Commands

INGEST_SUFFIXES = {
    ".md": rpb.CONTENT_TYPE_MARKDOWN,
    ".markdown": rpb.CONTENT_TYPE_MARKDOWN,
    ".txt": rpb.CONTENT_TYPE_PLAIN_TEXT,
    ".text": rpb.CONTENT_TYPE_PLAIN_TEXT,
}
# Files sent as they are, for the server to extract (it detects the type by content):
# the formats the service serves, from the one table that declares them.
FILE_SUFFIXES = extracted_suffixes()
# Files up to this size go in IngestDocuments batches (the gateway's message limit is
# 16 MiB); larger ones are uploaded alone in pieces (UploadDocument), up to the upload
# limit (GATEWAY_MAX_UPLOAD_BYTES' default); past that they are reported by name.
MAX_FILE_BYTES = 15 * 1024 * 1024
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
UPLOAD_PIECE_BYTES = 4 * 1024 * 1024
ASK_MODES = {
    "auto": qpb.ASK_MODE_AUTO,
    "retrieve": qpb.ASK_MODE_RETRIEVE,
    "agentic": qpb.ASK_MODE_AGENTIC,
    "sql": qpb.ASK_MODE_SQL,
}
SEARCH_MODES = {
    "hybrid": rpb.SEARCH_MODE_HYBRID,
    "dense": rpb.SEARCH_MODE_DENSE,
    "sparse": rpb.SEARCH_MODE_SPARSE,
}
# Requests stay well under the gateway's 16 MiB message limit.
MAX_BATCH_BYTES = 4 * 1024 * 1024


def register(commands: Commands) -> None:
    ask = commands.top.add_parser(
        "ask",
        help="ask a question: answer, citations, route and timings",
        description="Ask the gateway a question and print the cited answer.",
    )
    ask.add_argument("question", help="the question (quote it)")
    ask.add_argument(
        "--mode",
        choices=sorted(ASK_MODES),
        default="auto",
        help="auto: plan; retrieve: one search; agentic: RAG loop; sql",
    )
    ask.add_argument("--stream", action="store_true", help="print events as they arrive")
    ask.add_argument("--top-k", type=int, default=0, help="hits per search (0: default)")
    ask.add_argument("--database", default="", help="SQL database (default: the warehouse)")
    ask.add_argument("--trajectory", action="store_true", help="print the per-step record")
    _chart_option(ask)
    ask.add_argument(
        "--format",
        choices=("text", "table", "csv"),
        default="text",
        help="text: the answer; table: the answer, then each SQL result as an aligned table; "
        "csv: the first SQL result's rows only (for a spreadsheet or a pipe)",
    )
    ask.add_argument(
        "--conversation",
        default="",
        metavar="ID",
        help="continue this conversation (follow-ups like 'and in 2024?' are resolved in it)",
    )
    common_arguments(ask)
    ask.set_defaults(handler=_ask)

    search = commands.top.add_parser(
        "search",
        help="hybrid search over your documents",
        description="Search the documents of the key's tenant.",
    )
    search.add_argument("query", help="the query text")
    search.add_argument("--mode", choices=sorted(SEARCH_MODES), default="hybrid")
    search.add_argument("--top-k", type=int, default=10, help="hits to return (at most 100)")
    search.add_argument("--category", action="append", default=[], help="only this category")
    common_arguments(search)
    search.set_defaults(handler=_search)

    sql = commands.top.add_parser(
        "sql",
        help="answer a countable question with SQL",
        description="Ask a question of the SQL engine; prints the statement and the rows.",
    )
    sql.add_argument(
        "question",
        nargs="+",
        help='the question (quote it); or the answer memory: teach "QUESTION" "SQL", '
        "memory list, memory delete PAIR_ID, feedback ANSWER_ID helpful|wrong",
    )
    sql.add_argument("--database", default="", help="SQL database (default: the warehouse)")
    sql.add_argument("--max-rows", type=int, default=0, help="row cap (0: default)")
    sql.add_argument(
        "--format",
        choices=("table", "csv"),
        default="table",
        help="table: the statement, an aligned table and the details; csv: the rows only",
    )
    sql.add_argument(
        "--instructions",
        default="",
        metavar="TEXT",
        help='business rules for this question, e.g. "CPC = total cost / clicks"',
    )
    sql.add_argument("--corrected-sql", default="", help="feedback wrong: the right statement")
    sql.add_argument("--note", default="", help="feedback: a short note (500 characters)")
    _chart_option(sql)
    common_arguments(sql)
    sql.set_defaults(handler=_sql)

    ingest = commands.top.add_parser(
        "ingest",
        help="load files into your documents: PDF, Office, HTML, images… (progress on stderr)",
        description=f"Ingest {formats_phrase()} files ({', '.join(sorted(suffixes()))}); "
        "folders are walked.",
    )
    ingest.add_argument("paths", nargs="+", type=Path, help="files or folders")
    ingest.add_argument("--category", default="", help="category for every document")
    ingest.add_argument(
        "--dry-run",
        action="store_true",
        help="report only, write nothing; lists what each file would have redacted",
    )
    ingest.add_argument(
        "--keep",
        default="",
        metavar="KIND[,KIND]",
        help="personal-data kinds to keep verbatim in this ingest, e.g. EMAIL_ADDRESS,"
        "IP_ADDRESS (secrets are always redacted)",
    )
    ingest.add_argument("--batch", type=int, default=32, help="documents per request")
    common_arguments(ingest)
    # A batch may take as long as the gateway allows ingest (GATEWAY_INGEST_DEADLINE_S,
    # 300 s): the common 60 s once cut a large file off with nothing stored.
    ingest.set_defaults(handler=_ingest, timeout=300.0)

    keys = commands.top.add_parser(
        "keys", help="create, list and revoke API keys (operator; talks to the database)"
    )
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a key for a tenant (shown once)")
    create.add_argument("--tenant", required=True, help="tenant id, e.g. acme")
    create.add_argument("--label", default="", help="a note, e.g. the calling backend")
    create.add_argument(
        "--scope",
        action="append",
        default=None,
        metavar="SCOPE",
        help="what the key may do: ask (default), ingest, teach, admin, or all; and act_as "
        "for a key that calls for end users (each data call then names one in "
        "x-tandem-principal headers); repeat or comma-separate",
    )
    create.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(handler=_keys_create)
    scope = actions.add_parser(
        "scope", help="replace a key's scopes; a narrowed key is refused at once"
    )
    scope.add_argument("key_id", help="the key id (the part after tdm_, before the secret)")
    scope.add_argument(
        "--set",
        dest="scopes",
        action="append",
        required=True,
        metavar="SCOPE",
        help="the scopes it keeps: ask, ingest, teach, admin, or all, and act_as (repeat or "
        "comma-separate)",
    )
    scope.set_defaults(handler=_keys_scope)
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--tenant", default=None, help="only this tenant's keys")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_keys_list)
    revoke = actions.add_parser("revoke", help="revoke a key; it stops working at once")
    revoke.add_argument("key_id", help="the key id (the part after tdm_, before the secret)")
    revoke.add_argument("--tenant", default=None, help="refuse unless the key is this tenant's")
    revoke.set_defaults(handler=_keys_revoke)


def _chart_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chart",
        type=Path,
        default=None,
        metavar="FILE",
        help="the result's chart (chosen by rules): FILE.svg or FILE.png draws it, any other "
        "name gets its Vega-Lite v5 JSON spec",
    )


# -- ask ------------------------------------------------------------------------------


def _ask_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "question": args.question,
        "mode": ASK_MODES[args.mode],
        "options": qpb.AskOptions(
            top_k=args.top_k, database=args.database, include_trajectory=args.trajectory
        ),
        "conversation_id": getattr(args, "conversation", ""),
    }


@handled
def _ask(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    with channel:
        if args.stream:
            return _ask_stream(args, stub, sys.stdout)
        reply = stub.Ask(
            gpb.GatewayServiceAskRequest(**_ask_options(args)),
            metadata=call_metadata(args),
            timeout=args.timeout,
        )
    if args.chart is not None:
        drawn = [i.result.chart for i in reply.answer.sql_results if i.result.chart.vega_lite]
        chosen = drawn[0] if drawn else spb.Chart(reason="no SQL result to draw")
        print(describe_chart(chosen, args.chart), file=sys.stderr)
    if args.json:
        print_json(reply, sys.stdout)
    elif args.format == "csv":
        return _write_csv(reply.answer, sys.stdout)
    else:
        sys.stdout.write(render_answer(reply.answer))
        if args.format == "table":
            sys.stdout.write(render_results(reply.answer))
    return 0


def describe_chart(chart: spb.Chart, path: Path | None) -> str:
    """One line on the result's chart; with ``path``, its Vega-Lite spec written there."""
    kind = enum_name(spb.ChartKind, chart.kind, "CHART_KIND_").lower()
    if not chart.vega_lite:
        return f"Chart: none ({chart.reason or 'none drawn'})"
    if path is None:
        return f"Chart: {kind} — {chart.reason} (--chart FILE writes its Vega-Lite spec)"
    suffix = path.suffix.lower()
    if suffix in (".svg", ".png"):
        path.write_bytes(render_chart(chart.vega_lite, suffix))
        return f"Chart: {kind} — {chart.reason}; drawn to {path}"
    path.write_text(chart.vega_lite + "\n", encoding="utf-8")
    return f"Chart: {kind} — {chart.reason}; Vega-Lite spec written to {path}"


def render_chart(vega_lite: str, suffix: str) -> bytes:
    """The spec drawn as SVG or PNG in-process (vl-convert: no browser, no network)."""
    try:
        import vl_convert  # noqa: PLC0415
    except ImportError:
        raise CliError(
            "drawing a chart needs the charts extra: pip install -e '.[charts]' "
            "(or write its spec: --chart FILE.json)"
        ) from None
    if suffix == ".svg":
        return str(vl_convert.vegalite_to_svg(vega_lite)).encode("utf-8")
    return bytes(vl_convert.vegalite_to_png(vega_lite, scale=2))


def render_results(answer: qpb.Answer) -> str:
    """Each SQL result the answer rests on as an aligned table, exact values as stored."""
    blocks = []
    for item in answer.sql_results:
        result = item.result
        rows = [[_cell(v) for v in row.values] for row in result.rows]
        title = f"[{item.passage_id}] {result.explanation or 'SQL result'}"
        blocks.append(title + "\n" + render_table([c.name for c in result.columns], rows))
    return ("\n" + "\n\n".join(blocks) + "\n") if blocks else ""


def _write_csv(answer: qpb.Answer, out: TextIO) -> int:
    if not answer.sql_results:
        print("no SQL result in this answer: nothing to write as CSV", file=sys.stderr)
        return 1
    write_rows_csv(answer.sql_results[0].result, out)
    return 0


def write_rows_csv(result: spb.SqlResult, out: TextIO) -> None:
    """A header of column names, then the rows; NULL as an empty field, values exact."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in result.columns])
    for row in result.rows:
        writer.writerow(["" if v.WhichOneof("kind") in (None, "null_value") else _cell(v)
                         for v in row.values])  # fmt: skip


def _ask_stream(args: argparse.Namespace, stub: gpb_grpc.GatewayServiceStub, out: TextIO) -> int:
    events = stub.StreamAsk(
        gpb.GatewayServiceStreamAskRequest(**_ask_options(args)),
        metadata=call_metadata(args),
        timeout=args.timeout,
    )
    streamed_text = False
    for event in events:
        if args.json:
            out.write(json_format.MessageToJson(event, indent=None) + "\n")
            out.flush()
            continue
        kind = event.WhichOneof("event")
        if kind == "plan":
            steps = ", ".join(
                f"{s.step_id}:{enum_name(qpb.Tool, s.tool, 'TOOL_')}" for s in event.plan.steps
            )
            print(f"· plan r{event.plan.revision}: {steps}", file=sys.stderr, flush=True)
        elif kind == "step_started":
            print(f"· {event.step_started.step_id} started", file=sys.stderr, flush=True)
        elif kind == "step_finished":
            record = event.step_finished.step
            status = enum_name(qpb.StepStatus, record.status, "STEP_STATUS_")
            print(
                f"· {record.step_id} {status.lower()} ({as_ms(record.duration)})", file=sys.stderr
            )
        elif kind == "answer_delta":
            out.write(event.answer_delta.text)
            out.flush()
            streamed_text = True
        elif kind == "final_answer":
            if streamed_text:
                out.write("\n")
            out.write(render_answer(event.final_answer, include_text=not streamed_text))
    return 0


def render_answer(answer: qpb.Answer, *, include_text: bool = True) -> str:
    """The answer as a person reads it: text, citations with titles, route, timings."""
    lines: list[str] = []
    resolution = answer.resolution
    # A follow-up shows what was actually answered (an unresolved one says why in its text).
    if resolution.kind not in (
        qpb.FOLLOW_UP_KIND_UNSPECIFIED,
        qpb.FOLLOW_UP_KIND_STANDALONE,
        qpb.FOLLOW_UP_KIND_UNRESOLVED,
    ):
        lines += [f"Answering: {resolution.resolved_question}", ""]
    if include_text:
        lines += [answer.text, ""]
    if answer.disclaimer:
        lines += [f"Note: {answer.disclaimer}", ""]
    if answer.citations:
        lines.append("Citations:")
        for citation in answer.citations:
            where = citation.uri or citation.document_id or citation.sql_fingerprint[:12]
            title = citation.title or citation.document_id or "SQL result"
            # Where in the document: its section, or for an extracted file the page,
            # slide or sheet ("page 3", "slide 2 · Pricing").
            if citation.section and citation.section != title:
                title += f", {citation.section}"
            lines.append(f"  [{citation.passage_id}] {title}" + (f" — {where}" if where else ""))
        lines.append("")
    route = enum_name(qpb.Route, answer.route, "ROUTE_")
    outcome = enum_name(qpb.AnswerOutcome, answer.outcome, "ANSWER_OUTCOME_")
    why = f" ({answer.refusal_reason})" if answer.refusal_reason else ""
    lines.append(
        f"Route: {route.lower()} · mode {enum_name(qpb.AskMode, answer.mode, 'ASK_MODE_').lower()}"
        f" · outcome {outcome.lower()}{why} · confidence {answer.confidence:.2f}"
        f" · tool calls {answer.tool_calls}"
    )
    if answer.timings:
        lines.append(
            "Timings: " + " · ".join(f"{t.stage} {as_ms(t.duration)}" for t in answer.timings)
        )
    if answer.conversation_id:
        kind = enum_name(qpb.FollowUpKind, resolution.kind, "FOLLOW_UP_KIND_").lower()
        lines.append(f"Conversation: {answer.conversation_id} · {kind}")
    if answer.degraded:
        reasons = ", ".join(
            f"{d.component}: {enum_name(cpb.DegradationReason, d.reason, 'DEGRADATION_REASON_')}"
            for d in answer.degradations
        )
        lines.append(f"Degraded: {reasons or 'yes'}")
    for step in answer.trajectory:
        status = enum_name(qpb.StepStatus, step.status, "STEP_STATUS_").lower()
        lines.append(
            f"  step {step.step_id} {enum_name(qpb.Tool, step.tool, 'TOOL_').lower()} {status} "
            f"{as_ms(step.duration)} results={step.result_count} ({step.argument_summary})"
        )
    return "\n".join(lines) + "\n"


# -- search and sql -------------------------------------------------------------------


@handled
def _search(args: argparse.Namespace) -> int:
    channel, stub = gateway_stub(args)
    with channel:
        reply = stub.Search(
            gpb.GatewayServiceSearchRequest(
                query=args.query,
                mode=SEARCH_MODES[args.mode],
                top_k=args.top_k,
                filter=rpb.SearchFilter(categories=args.category),
            ),
            metadata=call_metadata(args),
            timeout=args.timeout,
        )
    if args.json:
        print_json(reply, sys.stdout)
        return 0
    if reply.degraded:
        reasons = ", ".join(f"{d.component}: {d.message}" for d in reply.degradations)
        print(f"Degraded: {reasons}", file=sys.stderr)
    if not reply.hits:
        print("No hits.")
    for rank, hit in enumerate(reply.hits, 1):
        title = hit.title or hit.document_id
        section = f" / {hit.section}" if hit.section and hit.section != title else ""
        print(f"{rank:>2}. {title}{section}  [{hit.document_id}] score {hit.score:.4f}")
        snippet = " ".join(hit.text.split())
        print(f"    {snippet[:200]}{'…' if len(snippet) > 200 else ''}")
    if reply.timings:
        print(timings_text(reply.timings))
    return 0


def _cell(value: cpb.SqlValue) -> str:
    kind = value.WhichOneof("kind")
    if kind is None or kind == "null_value":
        return "NULL"
    if kind == "timestamp_value":
        return value.timestamp_value.ToDatetime().isoformat()
    if kind == "array_value":
        return "{" + ",".join(_cell(v) for v in value.array_value.values) + "}"
    return str(getattr(value, kind))


def render_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(c) for c in columns]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    line = " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    rule = "-+-".join("-" * w for w in widths)
    body = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, rule, *body])


@handled
def _sql(args: argparse.Namespace) -> int:
    if _sql_memory.is_command(args.question):
        return _sql_memory.run(args)
    channel, stub = gateway_stub(args)
    with channel:
        reply = stub.AskSql(
            gpb.GatewayServiceAskSqlRequest(
                question=" ".join(args.question),
                database=args.database,
                max_rows=args.max_rows,
                instructions=args.instructions,
            ),
            metadata=call_metadata(args),
            timeout=args.timeout,
        )
    if args.json:
        print_json(reply, sys.stdout)
        return 0
    outcome = enum_name(spb.SqlAskOutcome, reply.outcome, "SQL_ASK_OUTCOME_").lower()
    if reply.outcome != spb.SQL_ASK_OUTCOME_ANSWERED:
        why = f" ({reply.refusal_reason})" if reply.refusal_reason else ""
        print(f"Outcome: {outcome}{why}. {reply.message}")
        if reply.answer_id:
            print(
                f"answer {reply.answer_id}: teach the right statement with "
                f'`tandem sql feedback {reply.answer_id} wrong --corrected-sql "SQL"`'
            )
        return 0
    result = reply.result
    if args.format == "csv":
        write_rows_csv(result, sys.stdout)
        return 0
    print(result.sql, end="\n\n")
    rows = [[_cell(v) for v in row.values] for row in result.rows]
    print(render_table([c.name for c in result.columns], rows))
    more = " (truncated)" if result.truncated else ""
    print(f"\n{result.row_count} row(s){more} · repairs {reply.repairs} · {outcome}")
    print(describe_chart(result.chart, args.chart))
    if reply.definitions_applied:
        print("definitions applied: " + "; ".join(reply.definitions_applied))
    if reply.definitions_ignored:
        print("definitions ignored: " + "; ".join(reply.definitions_ignored))
    if reply.confirmed_pair.pair_id:
        changed = ", ".join(f"{r.before} → {r.after}" for r in reply.confirmed_pair.replaced)
        print(
            f"answered like confirmed pair {reply.confirmed_pair.pair_id} "
            f"(similarity {reply.confirmed_pair.similarity:.2f}"
            + (f"; {changed}" if changed else "")
            + ")"
        )
    if reply.timings:
        print(timings_text(reply.timings))
    if reply.answer_id:
        print(f"answer {reply.answer_id}: `tandem sql feedback {reply.answer_id} helpful|wrong`")
    return 0


# -- ingest ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Skipped:
    """A file the command did not send, and why (every file is accounted for)."""

    path: Path
    reason: str


def discover(paths: Sequence[Path]) -> tuple[list[tuple[Path, str]], list[Skipped]]:
    """Every ingestible file under ``paths`` with its document id (the path relative to
    the argument it was found under, so ids stay stable between runs), and every other
    file with the reason it is left out."""
    found: list[tuple[Path, str]] = []
    skipped: list[Skipped] = []
    for root in paths:
        if root.is_dir():
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                relative = path.relative_to(root)
                if any(part.startswith(".") for part in relative.parts):
                    skipped.append(Skipped(path, "hidden (a name starting with '.')"))
                elif not _ingestible(path):
                    skipped.append(Skipped(path, _unsupported(path)))
                else:
                    found.append((path, relative.as_posix()))
        elif root.is_file():
            if not _ingestible(root):
                skipped.append(Skipped(root, _unsupported(root)))
            else:
                found.append((root, root.name))
        else:
            raise CliError(f"{root}: no such file or folder")
    return found, skipped


def _ingestible(path: Path) -> bool:
    suffix = path.suffix.lower()
    return suffix in INGEST_SUFFIXES or suffix in FILE_SUFFIXES


def _unsupported(path: Path) -> str:
    kind = path.suffix.lower() or "no extension"
    return f"unsupported type ({kind}): {formats_phrase()} only"


def read_file(path: Path) -> tuple[bytes | None, str]:
    """A file the server extracts, as bytes; ``None`` and the reason when it cannot be
    sent (unreadable, empty, over the size one request carries)."""
    try:
        size = path.stat().st_size
        if size > MAX_UPLOAD_BYTES:
            return None, f"too large: {size:,} bytes; one file may be at most {MAX_UPLOAD_BYTES:,}"
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or type(exc).__name__})"
    if not raw.strip():
        return None, "empty"
    return raw, ""


def _title(path: Path, text: str) -> str:
    for line in text.splitlines()[:20]:
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("_", " ").replace("-", " ")


# The retrieval service's limit on one document's text (RETRIEVAL_MAX_DOCUMENT_CHARS):
# a larger file is reported here, by name, instead of failing the whole request.
MAX_DOCUMENT_CHARS = 1_000_000
# Encodings tried after UTF-8, in order: the two most common in company files.
_FALLBACK_ENCODINGS = ("utf-16", "cp1252")


def read_document(path: Path) -> tuple[str | None, str]:
    """The file's text and a note on how it was read; ``None`` and the reason when it is
    not text this command can send (binary, too large, unreadable)."""
    try:
        size = path.stat().st_size
        # UTF-8 takes at most 4 bytes a character: larger is too long whatever it holds.
        if size > 4 * MAX_DOCUMENT_CHARS:
            return (
                None,
                f"too large: {size:,} bytes; a document holds at most "
                f"{MAX_DOCUMENT_CHARS:,} characters",
            )
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read ({exc.strerror or type(exc).__name__})"
    text, note = None, ""
    bom_utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff"))
    for encoding in ("utf-8-sig", *_FALLBACK_ENCODINGS):
        if encoding == "utf-16" and not bom_utf16:
            continue
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        note = "" if encoding == "utf-8-sig" else f"decoded as {encoding} (not UTF-8)"
        break
    if text is None:
        return None, "not text: no UTF-8, UTF-16 or Windows-1252 reading of it"
    if "\x00" in text:
        return None, "binary content (NUL bytes): not a text file"
    if len(text) > MAX_DOCUMENT_CHARS:
        return None, f"too large: {len(text):,} characters; the limit is {MAX_DOCUMENT_CHARS:,}"
    if not text.strip():
        return None, "empty"
    return text, note


def document_for(
    path: Path, document_id: str, category: str, text: str | None = None
) -> rpb.DocumentInput:
    if text is None:
        text, reason = read_document(path)
        if text is None:
            raise CliError(f"{path}: {reason}")
    return rpb.DocumentInput(
        document_id=document_id[:256],
        title=_title(path, text),
        uri=path.resolve().as_uri(),
        category=category,
        text=text,
        content_type=INGEST_SUFFIXES[path.suffix.lower()],
    )


def file_document(path: Path, document_id: str, category: str, content: bytes) -> rpb.DocumentInput:
    """A document the server extracts (its title too, from the file's own metadata)."""
    return rpb.DocumentInput(
        document_id=document_id[:256],
        uri=path.resolve().as_uri(),
        category=category,
        content=content,
        file_name=path.name,
    )


def keep_policy(raw: str) -> rpb.RedactionPolicy | None:
    """``--keep EMAIL_ADDRESS,IP_ADDRESS`` as the request's policy (None: the server's
    default); a name that is not a personal-data kind is refused here, by name."""
    names = [n.strip().upper().removeprefix("REDACTION_KIND_") for n in raw.split(",")]
    kinds: list[rpb.RedactionKind.ValueType] = []
    for name in filter(None, names):
        value = _kind_value(name) if _is_kind(name) else rpb.REDACTION_KIND_UNSPECIFIED
        if value < _FIRST_PERSONAL_KIND:
            personal = [
                n.removeprefix("REDACTION_KIND_")
                for n, v in rpb.RedactionKind.items()
                if v >= _FIRST_PERSONAL_KIND
            ]
            raise CliError(f"--keep {name}: only personal-data kinds may be kept: {personal}")
        kinds.append(value)
    return rpb.RedactionPolicy(keep_kinds=kinds) if kinds else None


# RedactionKind numbers personal-data kinds from 20 (secrets below are never kept).
_FIRST_PERSONAL_KIND = 20


def _is_kind(name: str) -> bool:
    return f"REDACTION_KIND_{name}" in rpb.RedactionKind.keys()  # noqa: SIM118 (an enum wrapper)


def upload_messages(
    doc: rpb.DocumentInput, dry_run: bool, policy: rpb.RedactionPolicy | None = None
) -> Iterator[gpb.GatewayServiceUploadDocumentRequest]:
    """A big file as UploadDocument sends it: the header, then its bytes in pieces."""
    described = rpb.DocumentInput()
    described.CopyFrom(doc)
    described.ClearField("content")
    yield gpb.GatewayServiceUploadDocumentRequest(
        header=gpb.GatewayServiceUploadHeader(
            document=described, dry_run=dry_run, redaction_policy=policy
        )
    )
    for start in range(0, len(doc.content), UPLOAD_PIECE_BYTES):
        yield gpb.GatewayServiceUploadDocumentRequest(
            chunk=doc.content[start : start + UPLOAD_PIECE_BYTES]
        )


def batches(docs: Sequence[rpb.DocumentInput], size: int) -> Iterator[list[rpb.DocumentInput]]:
    batch: list[rpb.DocumentInput] = []
    weight = 0
    for doc in docs:
        cost = doc.ByteSize()
        if batch and (len(batch) >= size or weight + cost > MAX_BATCH_BYTES):
            yield batch
            batch, weight = [], 0
        batch.append(doc)
        weight += cost
    if batch:
        yield batch


def _kind_value(name: str) -> rpb.RedactionKind.ValueType:
    return rpb.RedactionKind.Value(f"REDACTION_KIND_{name}")


def keeping_hint(kinds: Sequence[str], category: str) -> str:
    """How to keep the personal-data kinds that were redacted: for one ingest, for a
    category of documents (a server setting), or a company's own values (public manuals
    keep their maintainers' addresses this way)."""
    listed = ",".join(kinds)
    where = category or "<category>"
    return (
        f"to keep {listed}: `--keep {listed}` for this ingest, "
        f"RETRIEVAL_REDACTION_KEEP_BY_CATEGORY={where}={listed} for a category (server), "
        "or RETRIEVAL_REDACTION_ALLOW=<your domain or value>; secrets are always redacted"
    )


def _finding_line(finding: rpb.RedactionFinding) -> str:
    kind = enum_name(rpb.RedactionKind, finding.kind, "REDACTION_KIND_")
    return f"{finding.field} line {finding.line}: {kind} {finding.preview}"


def _redactions(document: rpb.DocumentResult) -> dict[str, int]:
    """Redactions applied to one document, by kind name (``EMAIL_ADDRESS``)."""
    return {
        enum_name(rpb.RedactionKind, r.kind, "REDACTION_KIND_"): r.count
        for r in document.redactions
    }


# A call cut midway (the retrieval service or a connection gone, a deadline) is resumed
# with the documents it had not settled, up to this many times in a row without progress.
RESUMABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
MAX_FRUITLESS_RESUMES = 3
RESUME_BACKOFF_S = 1.0


def _checkpoint(error: Any) -> list[rpb.DocumentResult]:
    """The documents an interrupted call's status says it settled (IngestCheckpoint)."""
    status = rpc_status.from_call(error)
    for detail in status.details if status else []:
        found = rpb.IngestCheckpoint()
        if detail.Unpack(found):
            return list(found.documents)
    return []


def merged_summary(
    documents: Sequence[rpb.DocumentResult], total: int, *, dry_run: bool, model_name: str
) -> rpb.IngestSummary:
    """One batch's manifest from its documents' results, gathered over several calls."""
    summary = rpb.IngestSummary(dry_run=dry_run, documents_total=total, model_name=model_name)
    counts = {
        rpb.DOCUMENT_OUTCOME_INCLUDED: "documents_included",
        rpb.DOCUMENT_OUTCOME_UNCHANGED: "documents_unchanged",
        rpb.DOCUMENT_OUTCOME_EXCLUDED: "documents_excluded",
        rpb.DOCUMENT_OUTCOME_FAILED: "documents_failed",
    }
    for document in sorted(documents, key=lambda d: d.index):
        summary.documents.append(document)
        name = counts.get(document.outcome)
        if name:
            setattr(summary, name, getattr(summary, name) + 1)
        if document.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED:
            summary.chunks_total += document.chunk_count
            if not dry_run:
                summary.chunks_written += document.chunk_count
    return summary


def resumed_ingest(
    batch: Sequence[rpb.DocumentInput],
    send: Callable[[Sequence[rpb.DocumentInput]], Any],
    progress: Callable[[int], None],
    *,
    dry_run: bool,
    sleep: Callable[[float], None] = time.sleep,
) -> rpb.IngestSummary:
    """Ingest ``batch``, resuming a call cut midway with only what it had not settled.

    Each document's result is taken from its ``document_finished`` event as it comes (sent
    once the document is committed) or from the IngestCheckpoint of the status that cut
    the call; the rest are sent again, by the same ids, so nothing is stored twice (a
    document committed as the call was cut comes back UNCHANGED). Gives up, raising the
    last error, after ``MAX_FRUITLESS_RESUMES`` cut calls in a row that settled nothing.
    """
    settled: dict[int, rpb.DocumentResult] = {}
    model_name = ""
    fruitless = 0
    while True:
        pending = [i for i in range(len(batch)) if i not in settled]
        before = len(settled)

        def note(result: rpb.DocumentResult, pending: list[int] = pending) -> None:
            if 0 <= result.index < len(pending):
                original = pending[result.index]
                settled[original] = rpb.DocumentResult()
                settled[original].CopyFrom(result)
                settled[original].index = original

        try:
            for event in send([batch[i] for i in pending]):
                kind = event.WhichOneof("event")
                if kind == "document_finished":
                    note(event.document_finished)
                    progress(len(settled))
                elif kind == "progress":
                    progress(before + event.progress.documents_done)
                elif kind == "summary":
                    if len(pending) == len(batch):
                        whole: rpb.IngestSummary = event.summary
                        return whole  # not cut: the server's manifest as it is
                    model_name = event.summary.model_name or model_name
                    for result in event.summary.documents:
                        note(result)
        except grpc.RpcError as exc:
            if exc.code() not in RESUMABLE:
                raise
            for result in _checkpoint(exc):
                note(result)
            left = len(batch) - len(settled)
            fruitless = 0 if len(settled) > before else fruitless + 1
            if not left:
                break
            if fruitless > MAX_FRUITLESS_RESUMES:
                raise
            print(
                f"  ingest cut midway ({exc.code().name}): {len(settled)} of "
                f"{len(batch)} documents settled; resuming with the {left} left",
                file=sys.stderr,
            )
            sleep(RESUME_BACKOFF_S * fruitless)
            continue
        if len(settled) < len(batch):
            raise CliError("the ingest stream ended without reporting every document")
        break
    merged = list(settled.values())
    return merged_summary(merged, len(batch), dry_run=dry_run, model_name=model_name)


class ProgressBar:
    """A one-line bar on stderr (redrawn in place on a terminal, every 10% otherwise)."""

    def __init__(self, total: int, out: TextIO | None = None, width: int = 30) -> None:
        self.total = max(total, 1)
        self.out = out or sys.stderr
        self.width = width
        self.tty = self.out.isatty()
        self._last: tuple[int, int] | None = None

    def update(self, done: int, note: str = "") -> None:
        share = min(done / self.total, 1.0)
        # Off a terminal, one line per 10% (and the last), not one per event.
        key = (done, 0) if self.tty else (int(share * 10), int(done >= self.total))
        if key == self._last:
            return
        self._last = key
        filled = int(share * self.width)
        bar = "█" * filled + "·" * (self.width - filled)
        line = f"ingest [{bar}] {done}/{self.total} documents {note}".rstrip()
        self.out.write(("\r" + line) if self.tty else (line + "\n"))
        self.out.flush()

    def close(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


@handled
def _ingest(args: argparse.Namespace) -> int:
    if not 1 <= args.batch <= 256:
        raise CliError("--batch must be between 1 and 256")
    files, skipped = discover(args.paths)
    docs: list[rpb.DocumentInput] = []
    notes: list[str] = []
    for path, doc_id in files:
        if path.suffix.lower() in FILE_SUFFIXES:
            content, why = read_file(path)
            if content is None:
                skipped.append(Skipped(path, why))
            else:
                docs.append(file_document(path, doc_id, args.category, content))
            continue
        text, note = read_document(path)
        if text is None:
            skipped.append(Skipped(path, note))
            continue
        if note:
            notes.append(f"  {path}: {note}")
        docs.append(document_for(path, doc_id, args.category, text))
    for item in skipped:
        print(f"  skipped {item.path}: {item.reason}", file=sys.stderr)
    for line in notes:
        print(line, file=sys.stderr)
    if not docs:
        raise CliError(
            f"nothing to ingest: {len(skipped)} file(s) skipped (reasons above)"
            if skipped
            else "no PDF, Word, PowerPoint, Excel, CSV, HTML, markdown or text files found"
        )
    metadata = call_metadata(args)
    policy = keep_policy(args.keep)
    totals = {"included": 0, "unchanged": 0, "excluded": 0, "failed": 0, "chunks": 0}
    failures: list[str] = []
    summaries: list[rpb.IngestSummary] = []
    bar = ProgressBar(len(docs))
    done = 0
    bar.update(0)
    channel, stub = gateway_stub(args)
    small = [d for d in docs if d.ByteSize() <= MAX_FILE_BYTES]
    big = [d for d in docs if d.ByteSize() > MAX_FILE_BYTES]

    def send(batch: Sequence[rpb.DocumentInput]) -> Any:
        """One call for ``batch``: IngestDocuments, or UploadDocument for one big file."""
        if len(batch) == 1 and batch[0].ByteSize() > MAX_FILE_BYTES:
            messages = upload_messages(batch[0], args.dry_run, policy)
            return stub.UploadDocument(messages, metadata=metadata, timeout=args.timeout)
        request = gpb.GatewayServiceIngestDocumentsRequest(
            documents=batch, dry_run=args.dry_run, redaction_policy=policy
        )
        return stub.IngestDocuments(request, metadata=metadata, timeout=args.timeout)

    with channel:
        for batch in [*batches(small, args.batch), *([doc] for doc in big)]:
            base = done

            def progress(settled: int, base: int = base) -> None:
                bar.update(base + settled)

            summary = resumed_ingest(batch, send, progress, dry_run=args.dry_run)
            summaries.append(summary)
            totals["included"] += summary.documents_included
            totals["unchanged"] += summary.documents_unchanged
            totals["excluded"] += summary.documents_excluded
            totals["failed"] += summary.documents_failed
            # A dry run writes nothing: count what it would write instead.
            totals["chunks"] += summary.chunks_total if args.dry_run else summary.chunks_written
            failures += [
                f"{d.document_id}: {d.error.message}"
                for d in summary.documents
                if d.HasField("error")
            ]
            done = base + len(batch)
            bar.update(done)
    bar.close()
    if args.json:
        print(json.dumps([json_format.MessageToDict(s) for s in summaries], indent=2))
        return 0 if not totals["failed"] else 1
    # A stored document with the same id was replaced: said by name, never silently (the
    # same file name from another folder ingested on its own gets the same id).
    replaced = [
        d
        for s in summaries
        for d in s.documents
        if d.replaced and d.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED
    ]
    verb = "would write" if args.dry_run else "wrote"
    print(
        f"{len(docs)} documents: {totals['included']} included, {totals['unchanged']} unchanged,"
        f" {totals['excluded']} excluded, {totals['failed']} failed"
        + (f" ({len(replaced)} replaced a stored copy)" if replaced else "")
        + f"; {verb} "
        f"{totals['chunks']} chunks"
        + (f"; {len(skipped)} file(s) skipped (reasons on stderr)" if skipped else "")
    )
    for document in replaced:
        action = "would replace" if args.dry_run else "replaced"
        print(
            f"  {action} the stored {document.document_id!r} with {document.uri}", file=sys.stderr
        )
    for summary in summaries:
        for document in summary.documents:
            said = list(document.extraction_notes)
            if document.encoding and document.encoding not in ("utf-8", "utf-8-sig", "ascii"):
                said.insert(0, f"decoded as {document.encoding} (not UTF-8)")
            if said:
                read_as = document.detected_type or "text"
                print(f"  {document.uri} (read as {read_as}): " + "; ".join(said), file=sys.stderr)
    redacted = [d for s in summaries for d in s.documents if d.redactions]
    if redacted:
        kinds: dict[str, int] = {}
        for document in redacted:
            for name, count in _redactions(document).items():
                kinds[name] = kinds.get(name, 0) + count
        listed = ", ".join(f"{name} {count}" for name, count in sorted(kinds.items()))
        print(f"redacted: {listed} in {len(redacted)} file(s)")
        keepable = sorted(
            k for k in kinds if _is_kind(k) and _kind_value(k) >= _FIRST_PERSONAL_KIND
        )
        if keepable:
            print(keeping_hint(keepable, args.category))
    if args.dry_run:
        for summary in summaries:
            for document in summary.documents:
                if document.outcome == rpb.DOCUMENT_OUTCOME_INCLUDED:
                    found = _redactions(document)
                    would = ", ".join(f"{name} {count}" for name, count in sorted(found.items()))
                    print(
                        f"  would write {document.chunk_count} chunks: {document.uri}"
                        + (f" (would redact {would})" if would else "")
                    )
                for finding in document.redaction_findings:
                    print(f"    {_finding_line(finding)}")
                listed_count = len(document.redaction_findings)
                if listed_count and listed_count < sum(found.values()):
                    print(f"    … and {sum(found.values()) - listed_count} more")
    for failure in failures:
        print(f"  failed {failure}", file=sys.stderr)
    return 0 if not totals["failed"] else 1


# -- keys (operator commands; straight to the gateway's database) ---------------------


# The checkout this command runs from: `tandem run` keeps its data in <checkout>/.tandem
# when started there, which is where `make run` starts it.
_CHECKOUT = Path(__file__).resolve().parents[2]


def _key_store_environ() -> dict[str, str]:
    """Where the keys live: ``DATABASE_URL``, else ``TANDEM_DATA_DIR``, else ``.tandem``
    here, else the checkout's ``.tandem`` (``tandem keys`` run from another directory once
    failed with "Parent directory of pgdata does not exist")."""
    environ = dict(os.environ)
    if environ.get("DATABASE_URL") or environ.get("TANDEM_DATA_DIR"):
        return environ
    here, checkout = Path(".tandem"), _CHECKOUT / ".tandem"
    if not here.is_dir() and checkout.is_dir():
        environ["TANDEM_DATA_DIR"] = str(checkout)
    elif not here.is_dir():
        raise CliError(
            "no data directory: run from the checkout `tandem run` uses, or set "
            "TANDEM_DATA_DIR (or DATABASE_URL) to the one it uses"
        )
    return environ


def _with_keys(run: Callable[[Any], Any]) -> Any:
    import asyncio  # noqa: PLC0415

    from gateway import key_administration  # noqa: PLC0415
    from services.common import DatabaseSettings, TandemError, resolve_url  # noqa: PLC0415

    async def main() -> Any:
        settings = DatabaseSettings.from_env(_key_store_environ())
        url = await asyncio.to_thread(resolve_url, settings)
        async with key_administration(url) as keys:
            return await run(keys)

    try:
        return asyncio.run(main())
    except TandemError as exc:
        raise CliError(f"{exc.code.name}: {exc.message}") from None


@handled
def _keys_create(args: argparse.Namespace) -> int:
    scopes = _scopes(args.scope or ["ask"])
    issued = _with_keys(lambda keys: keys.create(args.tenant, label=args.label, scopes=scopes))
    granted = ",".join(s.value for s in issued.scopes)
    kind = issued.kind
    if args.json:
        print(
            json.dumps(
                {
                    "key_id": issued.key_id,
                    "tenant": issued.tenant_id,
                    "api_key": issued.secret,
                    "scopes": [s.value for s in issued.scopes],
                    "kind": kind,
                }
            )
        )
        return 0
    print(
        f"tenant  {issued.tenant_id}\nkey id  {issued.key_id}\nscopes  {granted}\n"
        f"kind    {kind}\napi key {issued.secret}"
    )
    print("The key is shown once; store it now (export TANDEM_API_KEY=...).", file=sys.stderr)
    return 0


@handled
def _keys_list(args: argparse.Namespace) -> int:
    records = _with_keys(lambda keys: keys.list(args.tenant))
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "key_id": r.key_id,
                        "tenant": r.tenant_id,
                        "label": r.label,
                        "created_at": r.created_at.isoformat(),
                        "revoked_at": r.revoked_at.isoformat() if r.revoked_at else None,
                        "scopes": [s.value for s in r.scopes],
                        "kind": r.kind,
                    }
                    for r in records
                ],
                indent=2,
            )
        )
        return 0
    if not records:
        print("No keys.")
        return 0
    rows = [
        [
            r.key_id,
            r.tenant_id,
            r.label,
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            ",".join(s.value for s in r.scopes),
            r.kind,
            r.revoked_at.strftime("%Y-%m-%d %H:%M") if r.revoked_at else "active",
        ]
        for r in records
    ]
    print(render_table(["key id", "tenant", "label", "created", "scopes", "kind", "status"], rows))
    return 0


def _scopes(values: list[str]) -> tuple[Any, ...]:
    from gateway import parse_scopes  # noqa: PLC0415
    from services.common import TandemError  # noqa: PLC0415

    try:
        return parse_scopes(values)
    except TandemError as exc:
        raise CliError(f"--scope: {exc.message} (ask, ingest, teach, admin, all, act_as)") from None


@handled
def _keys_scope(args: argparse.Namespace) -> int:
    key_id = args.key_id.removeprefix("tdm_").split("_", 1)[0]
    scopes = _scopes(args.scopes)
    granted = _with_keys(lambda keys: keys.set_scopes(key_id, scopes))
    from gateway import key_kind  # noqa: PLC0415

    kind = key_kind(granted)
    print(
        f"{key_id} may now: {', '.join(s.value for s in granted)}; kind: {kind} (in effect at once)"
    )
    return 0


@handled
def _keys_revoke(args: argparse.Namespace) -> int:
    key_id = args.key_id.removeprefix("tdm_").split("_", 1)[0]

    async def revoke(keys: Any) -> None:
        if args.tenant is not None:
            owned = {r.key_id for r in await keys.list(args.tenant)}
            if key_id not in owned:
                raise CliError(f"no key {key_id} for tenant {args.tenant}")
        await keys.revoke(key_id)

    _with_keys(revoke)
    print(f"revoked {key_id}; it no longer authenticates")
    return 0
