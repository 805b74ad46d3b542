"""The answer's response built without repeating work its inputs alone decide: a chart
chosen once per distinct result, durations written from their two fields."""

from __future__ import annotations

import pytest
from google.protobuf import duration_pb2

from services.sql import _convert as convert
from services.sql.ask import GeneratorRole, ModelCall, ModelTier
from services.sql.gate import ResultSet
from services.sql.results import choose_chart, fingerprint
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb

COLUMNS = (pb.SqlColumn(name="industry", data_type="text"),
           pb.SqlColumn(name="count", data_type="bigint"))  # fmt: skip


def _result(*rows: tuple[str, int]) -> ResultSet:
    values = tuple(
        pb.SqlRow(values=[cpb.SqlValue(string_value=name), cpb.SqlValue(int_value=count)])
        for name, count in rows
    )
    return ResultSet(
        columns=COLUMNS,
        rows=values,
        truncated=False,
        truncation_reason=pb.TRUNCATION_REASON_UNSPECIFIED,
        fingerprint=fingerprint(COLUMNS, values),
        duration_s=0.01,
    )


def test_a_result_seen_again_is_not_charted_again(monkeypatch):
    chosen: list[int] = []
    real = choose_chart

    def counted(columns, rows):
        chosen.append(len(rows))
        return real(columns, rows)

    monkeypatch.setattr("services.sql._convert.choose_chart", counted)
    monkeypatch.setattr(convert, "_CHARTS", type(convert._CHARTS)())
    first = convert._result_chart(_result(("Retail", 4), ("Health", 9)))
    again = convert._result_chart(_result(("Retail", 4), ("Health", 9)))
    other = convert._result_chart(_result(("Retail", 4), ("Health", 10)))
    assert chosen == [2, 2]  # the same rows once, other rows their own
    assert first == again and first.kind == pb.CHART_KIND_BAR
    assert other.vega_lite != first.vega_lite and '"count":10' in other.vega_lite


def test_the_kept_charts_are_bounded(monkeypatch):
    monkeypatch.setattr(convert, "_CHARTS", type(convert._CHARTS)())
    monkeypatch.setattr(convert, "_CHARTS_MAX", 2)
    for count in range(5):
        convert._result_chart(_result(("Retail", count), ("Health", 1)))
    assert len(convert._CHARTS) == 2


@pytest.mark.parametrize("seconds", [0.0, 1e-9, 0.0123456, 0.999999999, 1.5, 12345.678, -3.0])
def test_durations_are_what_the_well_known_type_writes(seconds):
    expected = duration_pb2.Duration()
    expected.FromNanoseconds(max(int(seconds * 1e9), 0))
    assert convert.duration(seconds) == expected


def test_usage_is_written_in_place_with_its_sums_and_always_present():
    calls = [
        ModelCall(GeneratorRole.UNDERSTAND, ModelTier.FAST, "m", 10, 2, 0.25, 0.5),
        ModelCall(GeneratorRole.IDENTIFY_TABLES, ModelTier.FAST, "m", 5, 1, 0.5, 1.25),
        ModelCall(GeneratorRole.GENERATE_SQL, ModelTier.STRONG, "big", 7, 3, 1.0, 2.0),
    ]
    response = pb.AskQuestionResponse()
    convert.put_usage(response.usage, calls)
    usage = response.usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (3, 22, 6)
    assert usage.estimated_cost_usd == 1.75
    # understanding and identifying tables are one role on the wire: one entry
    assert [(e.role, e.calls, e.duration.seconds, e.duration.nanos) for e in usage.entries] == [
        (cpb.LLM_ROLE_UNDERSTAND, 2, 1, 750_000_000),
        (cpb.LLM_ROLE_GENERATE_SQL, 1, 2, 0),
    ]
    empty = pb.AskQuestionResponse()
    convert.put_usage(empty.usage, [])
    assert empty.HasField("usage") and not empty.usage.entries
