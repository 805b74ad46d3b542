"""`tandem ask --format table|csv`: the SQL rows an answer rests on, exact as stored."""

from __future__ import annotations

import io

from google.protobuf import struct_pb2

from services.cli._client import _write_csv, render_results
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb


def _answer() -> qpb.Answer:
    result = spb.SqlResult(
        columns=[spb.SqlColumn(name="quarter"), spb.SqlColumn(name="sum_amount")],
        rows=[
            spb.SqlRow(values=[cpb.SqlValue(string_value="2024-Q1"),
                               cpb.SqlValue(decimal_value="4000000.00")]),
            spb.SqlRow(values=[cpb.SqlValue(string_value="2024-Q2"),
                               cpb.SqlValue(null_value=struct_pb2.NULL_VALUE)]),
        ],
        explanation="Sums amount per quarter",
    )  # fmt: skip
    return qpb.Answer(
        text="2 rows: …", sql_results=[qpb.SqlStepResult(passage_id=1, result=result)]
    )


def test_table_prints_each_result_aligned_under_its_citation():
    text = render_results(_answer())
    lines = text.strip().splitlines()
    assert lines[0] == "[1] Sums amount per quarter"
    assert lines[1].split() == ["quarter", "|", "sum_amount"]
    assert "4000000.00" in text  # exact, not the formatted answer text
    assert render_results(qpb.Answer(text="no rows")) == ""


def test_csv_writes_the_first_results_rows_with_empty_nulls():
    out = io.StringIO()
    assert _write_csv(_answer(), out) == 0
    assert out.getvalue().splitlines() == [
        "quarter,sum_amount",
        "2024-Q1,4000000.00",
        "2024-Q2,",
    ]
    assert _write_csv(qpb.Answer(text="x"), io.StringIO()) == 1


def test_a_chart_is_described_and_written_only_when_one_was_drawn(tmp_path):
    from services.cli._client import describe_chart

    bar = spb.Chart(kind=spb.CHART_KIND_BAR, vega_lite='{"mark": "bar"}', reason="total per name")
    assert describe_chart(bar, None) == (
        "Chart: bar — total per name (--chart FILE writes its Vega-Lite spec)"
    )
    out = tmp_path / "chart.json"
    assert describe_chart(bar, out).endswith(f"written to {out}")
    assert out.read_text() == '{"mark": "bar"}\n'
    none = spb.Chart(kind=spb.CHART_KIND_NONE, reason="one value: nothing to draw")
    missing = tmp_path / "never.json"
    assert describe_chart(none, missing) == "Chart: none (one value: nothing to draw)"
    assert not missing.exists()
