"""Principle 6 across the whole stack, as processes: one trace per request from the gateway
down to every engine, and telemetry that carries metadata only.

One private stack exports to two sinks at once — the local span store
(``TANDEM_TRACE_DIR``) and an in-test OTLP/gRPC collector (``OTEL_EXPORTER_OTLP_ENDPOINT``,
spans and metrics) — and logs at DEBUG. A unique canary is planted in a document (ingested
through the gateway), in a warehouse row and in every question, and sent down every path:
RETRIEVE, AGENTIC, SQL, AUTO compound (unary and streaming), the SQL RPCs, ingest, gate
rejections, a validation error, and degraded answers with the embedding service down. The
stack is then stopped, which flushes every exporter, and everything it emitted is scanned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import psycopg
import pytest
from google.protobuf import struct_pb2

from services.common._spanstore import StoredSpan, build_tree, load_trace, store_files
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.e2e._otlp_sink import OtlpSink
from tests.privacy import find_canary, log_texts, new_canary
from tests.processes import ProcessStack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

TENANT = "e2e-observability"
DOCUMENT_ID = "onboarding-codename"
# Where every response, refusals included, tells the caller its trace id.
TRACE_ID_HEADER = "x-trace-id"
COMPOUND = "compound"
# The engines a compound question reaches; its trace must hold a server span of each.
TRACED_SERVICES = {"gateway", "router", "retrieval", "embedding", "sql"}


@dataclass
class Observed:
    """What the stack was asked, what it answered, and where its telemetry went."""

    canary: str
    trace_dir: Path
    log_dir: Path
    otlp: OtlpSink
    # request name → the x-trace-id its response carried
    trace_ids: dict[str, str] = field(default_factory=dict)
    # request name → text of its answer (or result rows), to prove the canary was used
    answers: dict[str, str] = field(default_factory=dict)
    degraded: dict[str, bool] = field(default_factory=dict)
    gate_rules: set[str] = field(default_factory=set)


def _bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


def _trace_id(call: grpc.Call) -> str:
    found = dict(call.trailing_metadata() or ()).get(TRACE_ID_HEADER)
    assert isinstance(found, str) and len(found) == 32, f"no {TRACE_ID_HEADER} trailer: {found!r}"
    return found


def _plant_warehouse_row(stack: ProcessStack, name: str) -> None:
    """A company that outranks every demo company by headcount, so "the company with the
    most employees" is the canary's."""
    with psycopg.connect(stack.database_url("tandem_warehouse"), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO companies (company_id, name, industry, segment, region_id, country,"
            " employee_count, annual_revenue, website, owner_id, created_at)"
            " SELECT max(company_id) + 1, %s, 'Software', 'Enterprise', min(region_id),"
            " 'Germany', 9999999, 1000, 'https://canary.example', min(owner_id), now()"
            " FROM companies",
            (name,),
        )


def _rows_text(result: spb.SqlResult) -> str:
    return " ".join(v.string_value for row in result.rows for v in row.values)


def _run_every_path(stack: ProcessStack, observed: Observed) -> None:
    canary = observed.canary
    # Capitalised, so the offline schema linker reads it as a name and filters on it: the
    # canary becomes a SQL literal that runs. (The scan ignores case.)
    company = f"{canary.capitalize()} GmbH"
    _plant_warehouse_row(stack, company)
    metadata = _bearer(stack.create_key(TENANT))
    with grpc.insecure_channel(stack.gateway_address) as channel:
        stub = gpb_grpc.GatewayServiceStub(channel)

        def ask(name: str, mode: qpb.AskMode.ValueType, question: str) -> qpb.Answer:
            reply, call = stub.Ask.with_call(
                gpb.GatewayServiceAskRequest(
                    question=question,
                    mode=mode,
                    options=qpb.AskOptions(include_trajectory=True),
                ),
                metadata=metadata,
                timeout=60,
            )
            observed.trace_ids[name] = _trace_id(call)
            answer: qpb.Answer = reply.answer
            observed.answers[name] = answer.text + " " + _answer_rows(answer)
            observed.degraded[name] = answer.degraded
            return answer

        # ingest: the canary in the text, title, uri and metadata of a document
        document = rpb.DocumentInput(
            document_id=DOCUMENT_ID,
            title=f"Onboarding call notes {canary}",
            uri=f"notes://onboarding/{canary}",
            category="call_note",
            metadata=struct_pb2.Struct(fields={"codename": struct_pb2.Value(string_value=canary)}),
            text=(
                "# Onboarding call\n\nThe onboarding call notes name "
                f"{canary} as the Globex onboarding codename. Globex asked for a security "
                "review before the pilot starts.\n"
            ),
        )
        events = stub.IngestDocuments(
            gpb.GatewayServiceIngestDocumentsRequest(documents=[document]),
            metadata=metadata,
            timeout=60,
        )
        summary = [e.summary for e in events if e.HasField("summary")]
        observed.trace_ids["ingest"] = _trace_id(events)
        assert summary and summary[-1].chunks_written > 0, summary

        ask("retrieve", qpb.ASK_MODE_RETRIEVE, f"What is the onboarding codename {canary}?")
        ask("agentic", qpb.ASK_MODE_AGENTIC, f"What do the onboarding notes say about {canary}?")
        ask("sql", qpb.ASK_MODE_SQL, f"List the companies named {company}")
        compound_question = (
            f"How many companies are there, and what do the onboarding notes say about {canary}?"
        )
        answer = ask(COMPOUND, qpb.ASK_MODE_AUTO, compound_question)
        assert answer.sql_results and answer.citations, "the compound question used one engine"

        stream = stub.StreamAsk(
            gpb.GatewayServiceStreamAskRequest(question=compound_question),
            metadata=metadata,
            timeout=60,
        )
        finals = [e.final_answer.text for e in stream if e.HasField("final_answer")]
        observed.trace_ids["stream"] = _trace_id(stream)
        observed.answers["stream"] = " ".join(finals)

        # the canary rides in the question's instructions (request data a product sends,
        # as private as the question) and comes back in the answer's row
        asked, call = stub.AskSql.with_call(
            gpb.GatewayServiceAskSqlRequest(
                question="Which company has the most employees?",
                instructions=f"Project codename {canary}.",
            ),
            metadata=metadata,
            timeout=60,
        )
        observed.trace_ids["ask_sql"] = _trace_id(call)
        observed.answers["ask_sql"] = _rows_text(asked.result)

        # a literal holding the canary, executed
        intent = spb.SqlIntent(
            kind=spb.INTENT_KIND_LIST,
            table="companies",
            columns=["name", "employee_count"],
            filters=[
                spb.IntentFilter(
                    column="name",
                    op=spb.FILTER_OPERATOR_EQUAL,
                    values=[cpb.SqlValue(string_value=company)],
                )
            ],
            limit=5,
        )
        ran, call = stub.RunSqlIntent.with_call(
            gpb.GatewayServiceRunSqlIntentRequest(intent=intent), metadata=metadata, timeout=60
        )
        observed.trace_ids["intent"] = _trace_id(call)
        observed.answers["intent"] = _rows_text(ran.result)

        # gate rejections: hostile statements with the canary as literal and identifier
        for number, statement in enumerate(
            (
                f"DELETE FROM companies WHERE name = '{company}'",
                f"SELECT pg_sleep(10), '{canary}' AS tag FROM companies",
                f"SELECT secret FROM {canary}_vault WHERE note = '{canary}'",
            )
        ):
            verdict, call = stub.ValidateSql.with_call(
                gpb.GatewayServiceValidateSqlRequest(sql=statement), metadata=metadata, timeout=30
            )
            observed.trace_ids[f"gate{number}"] = _trace_id(call)
            assert not verdict.valid, statement
            observed.gate_rules.update(spb.SqlGateRule.Name(v.rule) for v in verdict.violations)

        # a request the gateway refuses, with the canary in it
        with pytest.raises(grpc.RpcError) as refused:
            stub.Search(
                gpb.GatewayServiceSearchRequest(query=canary, top_k=-1),
                metadata=metadata,
                timeout=30,
            )
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        observed.trace_ids["refused"] = _trace_id(refused.value)  # type: ignore[arg-type]

        # degraded: the embedding service is down (stopped gracefully, so its spans flush)
        stack.terminate("embedding")
        searched, call = stub.Search.with_call(
            gpb.GatewayServiceSearchRequest(query=f"onboarding codename {canary}"),
            metadata=metadata,
            timeout=60,
        )
        observed.trace_ids["degraded_search"] = _trace_id(call)
        observed.degraded["degraded_search"] = searched.degraded
        ask("degraded_ask", qpb.ASK_MODE_AUTO, compound_question)
        try:
            for event in stub.IngestDocuments(
                gpb.GatewayServiceIngestDocumentsRequest(
                    documents=[
                        rpb.DocumentInput(
                            document_id=f"{DOCUMENT_ID}-2",
                            title=f"Follow-up {canary}",
                            text=f"The follow-up call confirmed {canary} for the pilot.",
                        )
                    ]
                ),
                metadata=metadata,
                timeout=60,
            ):
                if event.HasField("summary"):
                    observed.answers["degraded_ingest"] = str(event.summary)
                    observed.degraded["degraded_ingest"] = event.summary.documents_failed == 1
        except grpc.RpcError as exc:
            # Refusing the whole call would do too: it is visible to the caller.
            observed.answers["degraded_ingest"] = repr(exc)
            observed.degraded["degraded_ingest"] = True


def _answer_rows(answer: qpb.Answer) -> str:
    return " ".join(_rows_text(step.result) for step in answer.sql_results)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    root = tmp_path_factory.mktemp("observability")
    with OtlpSink() as otlp:
        stack = ProcessStack(
            root,
            env={
                "TANDEM_TRACE_DIR": str(root / "traces"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
                "OTEL_METRIC_EXPORT_INTERVAL": "1000",
                "OTEL_BSP_SCHEDULE_DELAY": "200",
                "LOG_LEVEL": "DEBUG",
                "GATEWAY_RATE_PER_S": "100",
                "GATEWAY_BURST": "100",
            },
        )
        observed = Observed(new_canary(), root / "traces", stack.log_dir, otlp)
        with stack:
            _run_every_path(stack, observed)
        # Stopped: every process has flushed its span batches and its last metrics.
        yield observed


def _file_lines(paths: list[Path]) -> Iterator[tuple[str, str]]:
    for path in paths:
        for where, line in log_texts(path.read_text(errors="replace").splitlines()):
            yield f"{path.name} {where}", line


def test_the_canary_reaches_answers_but_no_span_log_or_metric(observed: Observed) -> None:
    canary = observed.canary
    # It was used: the document was retrieved, the warehouse row was read, the literal ran.
    for name in ("retrieve", "agentic", COMPOUND, "stream"):
        assert canary in observed.answers[name], f"{name}: {observed.answers[name][:300]!r}"
    for name in ("sql", "ask_sql", "intent"):
        assert f"{canary} gmbh" in observed.answers[name].lower(), (name, observed.answers[name])
    assert {"SQL_GATE_RULE_QUERY_ROOT", "SQL_GATE_RULE_UNKNOWN_TABLE"} <= observed.gate_rules
    assert observed.degraded["degraded_search"] and observed.degraded["degraded_ask"]
    assert observed.degraded["degraded_ingest"], observed.answers["degraded_ingest"]
    assert not observed.degraded[COMPOUND]

    span_files = store_files(observed.trace_dir)
    log_files = sorted(observed.log_dir.glob("*.log"))
    assert {p.stem for p in log_files} >= {"postgres", *TRACED_SERVICES}
    report = find_canary(
        canary, _file_lines(span_files), _file_lines(log_files), observed.otlp.texts()
    )
    assert not report.found, "canary leaked:\n" + "\n".join(report.found)

    # ...and the scan was not vacuous: every sink got the metadata it should.
    assert {p.name for p in span_files} >= {f"{s}.jsonl" for s in TRACED_SERVICES}
    stored = [
        StoredSpan.from_record(json.loads(line))
        for _where, line in _file_lines(span_files)
        if line.strip()
    ]
    names = {s.name for s in stored}
    assert {
        "retrieval.ingest",
        "retrieval.search",
        "embedding.embed",
        "router.ask",
        "router.step",
        "sql.ask",
        "sql.gate",
        "sql.execute",
    } <= names, names
    assert any(s.attributes.get("tandem.degraded") is True for s in stored)
    # The OTLP collector received the same spans as the local store.
    assert {s.span_id for s in observed.otlp.spans()} >= {s.span_id for s in stored}
    # Metric labels arrived, naming what happened (rules, reasons, outcomes), not content.
    labels = {
        (name, tuple(sorted(point.items())))
        for _service, name, point in observed.otlp.metric_points()
    }
    for expected in (
        ("tandem.sql.gate.rejections", (("rule", "QUERY_ROOT"),)),
        ("tandem.sql.gate.rejections", (("rule", "FUNCTION_NOT_ALLOWED"),)),
        ("tandem.sql.gate.rejections", (("rule", "UNKNOWN_TABLE"),)),
        ("tandem.degraded", (("reason", "EMBEDDING_UNAVAILABLE"), ("service", "retrieval"))),
        ("tandem.retrieval.ingest.documents", (("outcome", "FAILED"),)),
        (
            "tandem.rpc.server.duration",
            (("rpc.code", "INVALID_ARGUMENT"), ("rpc.method", "/tandem.v1.GatewayService/Search")),
        ),
    ):
        assert expected in labels, f"{expected} not among {sorted(labels)}"
    # The operator is told about the degradation, by cause.
    warnings = [
        json.loads(line)
        for line in (observed.log_dir / "retrieval.log").read_text().splitlines()
        if '"level":"WARNING"' in line
    ]
    assert any(w.get("cause") == "EMBEDDING_UNAVAILABLE" for w in warnings), warnings
    assert report.scanned > len(stored) + len(labels)


def _kinds(trace_dir: Path, trace_id: str) -> dict[str, str]:
    """span id → span kind (SERVER, CLIENT, INTERNAL) for one trace, from the store."""
    kinds: dict[str, str] = {}
    for _where, line in _file_lines(store_files(trace_dir)):
        record = json.loads(line)
        if record["trace_id"] == trace_id:
            kinds[record["span_id"]] = record["kind"]
    return kinds


def _assert_one_tree(trace_dir: Path, trace_id: str) -> list[StoredSpan]:
    """The trace's spans form one tree: its root is the gateway's server span, every
    other span's parent is in the trace, and every server span below the root continues
    its caller's client span for the same method."""
    spans = load_trace(trace_dir, trace_id)
    kinds = _kinds(trace_dir, trace_id)
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.parent_id is None]
    assert len(roots) == 1, [(s.service, s.name) for s in roots]
    root = roots[0]
    assert (root.service, kinds[root.span_id]) == ("gateway", "SERVER"), root
    assert root.name.startswith("/tandem.v1.GatewayService/"), root.name
    orphans = [(s.service, s.name) for s in spans if s.parent_id and s.parent_id not in by_id]
    assert not orphans, f"spans whose parent is not in trace {trace_id}: {orphans}"
    assert build_tree(spans) == [root]
    for span in spans:
        if span is root:
            continue
        parent = by_id[span.parent_id or ""]
        if kinds[span.span_id] == "SERVER":
            assert kinds[parent.span_id] == "CLIENT", (span.name, parent.name)
            assert parent.service != span.service and parent.name == span.name, (span, parent)
        else:
            assert parent.service == span.service, (span, parent)
    return spans


def test_one_request_is_one_trace_across_every_service(observed: Observed) -> None:
    trace_id = observed.trace_ids[COMPOUND]
    spans = _assert_one_tree(observed.trace_dir, trace_id)
    kinds = _kinds(observed.trace_dir, trace_id)
    served = {s.service for s in spans if kinds[s.span_id] == "SERVER"}
    assert served >= TRACED_SERVICES, served
    assert {"router.ask", "router.step", "retrieval.search", "sql.ask", "embedding.embed"} <= {
        s.name for s in spans
    }

    # The collector received the same tree over OTLP.
    exported = [s for s in observed.otlp.spans() if s.trace_id == trace_id]
    assert {(s.span_id, s.parent_id) for s in exported} == {(s.span_id, s.parent_id) for s in spans}
    assert {s.service for s in exported} >= {f"tandem-{name}" for name in TRACED_SERVICES}

    # Log lines carry the same trace id in every service the request went through.
    logged: set[str] = set()
    for path in sorted(observed.log_dir.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if trace_id in line and json.loads(line).get("trace_id") == trace_id:
                logged.add(path.stem)
    assert logged >= TRACED_SERVICES, logged

    # Every other request, streaming and refused ones included, is one tree of its own.
    for name, other in observed.trace_ids.items():
        assert load_trace(observed.trace_dir, other), f"{name}: no spans stored"
        _assert_one_tree(observed.trace_dir, other)
    assert len(set(observed.trace_ids.values())) == len(observed.trace_ids)
