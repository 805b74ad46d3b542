"""The privacy rule is structural: the export-time filter, the attribute rules, the SQL
fingerprint, the span store and ``tandem trace``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.metrics import NoOpCounter, NoOpHistogram
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.cli._main import Commands
from services.cli._trace import register
from services.common import Telemetry, TelemetrySettings
from services.common._observability import (
    PrivacyFilter,
    fingerprint_sql,
    key_allowed,
    node_span,
    value_allowed,
)
from services.common._spanstore import JsonlSpanExporter, build_tree, load_trace, render_tree
from tests.privacy import assert_no_canary, new_canary


def tandem(argv: list[str]) -> int:
    """``tandem`` with only the trace command (the CLI adds the module to its list)."""
    parser = argparse.ArgumentParser(prog="tandem")
    top = parser.add_subparsers(dest="command", required=True)
    register(Commands(top=top, bench=None, eval=None))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


def _filtered() -> tuple[trace.Tracer, PrivacyFilter, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    privacy = PrivacyFilter(exporter)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(privacy))
    return provider.get_tracer("test"), privacy, exporter


def test_free_text_never_leaves_whatever_the_key() -> None:
    tracer, privacy, exporter = _filtered()
    canary = new_canary()
    with tracer.start_as_current_span("work") as span:
        span.set_attribute("tandem.question", f"how many deals did {canary} close?")
        span.set_attribute("tandem.hits", 3)
        span.set_attribute("tandem.mode", "HYBRID")
        span.set_attribute("sql.tables", ["public.companies", "public.deals"])
        span.set_attribute("db.statement", "SELECT 1")
        span.set_attribute("user.email", "someone")
        span.set_attribute("tandem.snippets", ["fine", f"not {canary} fine"])
        span.add_event("note", {"tandem.text": f"{canary} said 'hello'", "tandem.count": 2})
        span.set_status(trace.Status(trace.StatusCode.ERROR, f"bad value '{canary}'"))
    (exported,) = exporter.get_finished_spans()
    assert dict(exported.attributes or {}) == {
        "tandem.hits": 3,
        "tandem.mode": "HYBRID",
        "sql.tables": ("public.companies", "public.deals"),
    }
    assert dict(exported.events[0].attributes or {}) == {"tandem.count": 2}
    assert exported.status.description == "redacted"
    assert privacy.dropped == 6
    assert_no_canary(canary, spans=[exported])


def test_span_names_are_names_not_text() -> None:
    tracer, _, exporter = _filtered()
    canary = new_canary()
    with tracer.start_as_current_span(f"search for {canary}"):
        pass
    with tracer.start_as_current_span("/tandem.v1.SqlService/AskQuestion"):
        pass
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["span", "/tandem.v1.SqlService/AskQuestion"]


def test_exception_events_keep_the_type_only() -> None:
    tracer, _, exporter = _filtered()
    canary = new_canary()
    with pytest.raises(ValueError), tracer.start_as_current_span("boom"):
        raise ValueError(f"invalid input syntax for type integer: {canary!r}")
    (exported,) = exporter.get_finished_spans()
    (event,) = exported.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == "ValueError"
    assert_no_canary(canary, spans=[exported])


def test_node_span_marks_errors_with_the_type_not_the_message() -> None:
    tracer, _, exporter = _filtered()
    with (
        pytest.raises(KeyError),
        node_span(tracer, "retrieval.search.db_query", {"tandem.limit": 5}),
    ):
        raise KeyError("secret text")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is trace.StatusCode.ERROR
    assert span.status.description == "KeyError"
    assert not span.events


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        (3, True),
        (0.5, True),
        (True, True),
        ("gemini-2.5-pro", True),
        ("public.companies", True),
        ("two words", False),
        ("it's", False),
        ("x" * 129, False),
        (["A", "B"], True),
        (["A", "b c"], False),
        (b"bytes", False),
    ],
)
def test_values_are_numbers_flags_or_short_tokens(value: object, allowed: bool) -> None:
    assert value_allowed(value) is allowed


def test_keys_follow_the_allow_list() -> None:
    assert key_allowed("tandem.anything") and key_allowed("rpc.method")
    assert not key_allowed("exception.message") and not key_allowed("http.url")


def test_fingerprint_ignores_literals_and_layout_but_not_shape() -> None:
    a = fingerprint_sql("SELECT name FROM companies WHERE name = 'Acme' LIMIT 5")
    b = fingerprint_sql("select name\n  from companies where name = 'Zebulon'  limit 50")
    c = fingerprint_sql("SELECT id FROM companies WHERE name = 'Acme' LIMIT 5")
    assert a == b != c and len(a) == 64
    assert fingerprint_sql("SELEC 'x' FRM") == fingerprint_sql("selec 'y'   frm")


def test_span_store_rotates_at_its_cap(tmp_path: Path) -> None:
    exporter = JsonlSpanExporter(tmp_path, "svc", max_bytes=4096)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for _ in range(60):
        with tracer.start_as_current_span("op") as span:
            span.set_attribute("tandem.count", 1)
    current = tmp_path / "svc.jsonl"
    rotated = tmp_path / "svc.jsonl.1"
    assert rotated.exists() and current.exists()
    assert current.stat().st_size <= 4096 and rotated.stat().st_size <= 4096
    for line in current.read_text().splitlines():
        record = json.loads(line)
        assert {"trace_id", "span_id", "parent_id", "name", "service", "status"} <= set(record)


def _two_services(tmp_path: Path) -> str:
    """One trace across two services' telemetry, both writing to the span store."""
    a = Telemetry(TelemetrySettings("gateway", trace_dir=str(tmp_path)))
    b = Telemetry(TelemetrySettings("sql", trace_dir=str(tmp_path)))
    gateway, sql = a.tracer("t"), b.tracer("t")
    with (
        gateway.start_as_current_span("/tandem.v1.GatewayService/AskSql") as root,
        sql.start_as_current_span("sql.ask") as ask,
    ):
        ask.set_attribute("sql.ask.repairs", 1)
        with sql.start_as_current_span("sql.gate") as gate:
            gate.set_attribute("sql.gate.rules", ["UNKNOWN_TABLE"])
            gate.set_status(trace.Status(trace.StatusCode.ERROR, "rejected"))
        with sql.start_as_current_span("sql.execute") as execute:
            execute.set_attribute("sql.row_count", 7)
            execute.set_attribute("sql.question", "free text never stored")
    a.shutdown()
    b.shutdown()
    return format(root.get_span_context().trace_id, "032x")


def test_the_span_store_holds_a_trace_across_services(tmp_path: Path) -> None:
    trace_id = _two_services(tmp_path)
    spans = load_trace(tmp_path, trace_id)
    assert spans[0].name == "/tandem.v1.GatewayService/AskSql"
    assert {s.service for s in spans} == {"gateway", "sql"}
    (root,) = build_tree(spans)
    assert [c.name for c in root.children] == ["sql.ask"]
    assert [c.name for c in root.children[0].children] == ["sql.gate", "sql.execute"]
    lines = render_tree([root])
    assert lines[2].startswith("    sql.gate  [sql]") and "!ERROR(rejected)" in lines[2]
    assert "rules=[UNKNOWN_TABLE]" in lines[2]
    assert "free text" not in "".join((tmp_path / "sql.jsonl").read_text())


def test_tandem_trace_prints_the_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_id = _two_services(tmp_path)
    assert tandem(["trace", trace_id, "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"trace {trace_id}: 4 spans, 2 services (gateway, sql)")
    assert out[1].startswith("/tandem.v1.GatewayService/AskSql  [gateway]")
    assert out[2].startswith("  sql.ask  [sql]") and "repairs=1" in out[2]
    assert out[4].startswith("    sql.execute  [sql]") and "row_count=7" in out[4]


def test_tandem_trace_explains_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tandem(["trace", "nothex", "--dir", str(tmp_path)]) == 2
    assert tandem(["trace", "0" * 32, "--dir", str(tmp_path)]) == 1
    assert "no span files" in capsys.readouterr().err
    _two_services(tmp_path)
    assert tandem(["trace", "f" * 32, "--dir", str(tmp_path)]) == 1
    assert "not found" in capsys.readouterr().err


def test_the_span_store_is_configured_from_the_environment() -> None:
    settings = TelemetrySettings.from_env(
        "sql", {"TANDEM_TRACE_DIR": "/tmp/traces", "TANDEM_TRACE_MAX_BYTES": "1048576"}
    )
    assert settings.trace_dir == "/tmp/traces" and settings.trace_max_bytes == 1048576
    assert TelemetrySettings.from_env("sql", {}).trace_dir is None


def test_without_a_metric_reader_instruments_record_nothing() -> None:
    """No reader, nothing reads a measurement: the instruments are no-ops, so the SDK does
    not build one (its time, context and exemplar decision) on every RPC and model call;
    with a reader every measurement is read."""
    quiet = Telemetry(TelemetrySettings(service_name="quiet"))
    assert isinstance(quiet.meter("m").create_counter("c"), NoOpCounter)
    assert isinstance(quiet.meter("m").create_histogram("h"), NoOpHistogram)
    quiet.metrics.llm_call(
        role="r", tier="t", input_tokens=1, output_tokens=1, cost_usd=None, degraded=False
    )
    quiet.shutdown()

    reader = InMemoryMetricReader()
    read = Telemetry(TelemetrySettings(service_name="read"), metric_reader=reader)
    read.meter("m").create_histogram("h").record(1.0, {"k": "v"})
    data = reader.get_metrics_data()
    assert data is not None
    names = [
        metric.name
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    ]
    assert "h" in names
    read.shutdown()
