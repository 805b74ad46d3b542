"""Charts chosen by rules over column types, each spec valid Vega-Lite v5 (its schema as
shipped in altair), never generated code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.sql._convert import chart
from services.sql.results._charts import MAX_BARS, choose_chart
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb
from tests.vega import schema_errors


def _valid(spec: dict[str, Any] | None) -> dict[str, Any]:
    assert spec is not None
    errors = schema_errors(spec)
    assert errors == [], errors[:3]
    return spec


QUARTERS = [("2024-04-01T00:00:00", "4500000.10"), ("2024-01-01T00:00:00", "4000000")]


@pytest.mark.parametrize(
    ("columns", "rows", "kind", "reason"),
    [
        (
            [("quarter", "timestamp without time zone"), ("sum_amount", "numeric")],
            QUARTERS,
            "line",
            "sum_amount over quarter",
        ),
        (
            [("month", "date"), ("region", "text"), ("deals", "bigint")],
            [("2024-01-01", "EMEA", 3), ("2024-01-01", "APAC", 4), ("2024-02-01", "EMEA", 5)],
            "line",
            "one line per region",
        ),
        (
            [("industry", "text"), ("count", "bigint")],
            [("Retail", 4), ("Health", 9)],
            "bar",
            "count per industry",
        ),
        (
            [("price", "numeric"), ("quantity", "integer")],
            [(1, 2), (3, 4), (5, 9)],
            "scatter",
            "quantity against price",
        ),
        (
            [("name", "text"), ("price", "numeric"), ("quantity", "integer")],
            [("a", 1, 2), ("b", 3, 4), ("c", 5, 9)],
            "scatter",
            "quantity against price",
        ),
    ],
    ids=["time-measure", "time-category-measure", "category-measure", "two-measures", "labelled"],
)
def test_each_rule_draws_a_valid_spec_of_its_kind(columns, rows, kind, reason):
    choice = choose_chart(columns, rows)
    assert (choice.kind, reason in choice.reason) == (kind, True)
    spec = _valid(choice.spec)
    assert spec["mark"]["type"] == {"line": "line", "bar": "bar", "scatter": "point"}[kind]
    assert len(spec["data"]["values"]) == len(rows)
    assert json.loads(choice.vega_lite()) == spec


def test_a_line_runs_in_time_order_with_numbers_not_text():
    spec = _valid(choose_chart([("quarter", "date"), ("total", "numeric")], QUARTERS).spec)
    assert [v["quarter"] for v in spec["data"]["values"]] == [
        "2024-01-01T00:00:00",
        "2024-04-01T00:00:00",
    ]
    assert [v["total"] for v in spec["data"]["values"]] == [4000000.0, 4500000.1]


def test_many_categories_keep_the_largest_and_sum_the_rest():
    rows = [(f"c{i:02d}", i) for i in range(MAX_BARS + 5)]
    choice = choose_chart([("category", "text"), ("total", "bigint")], rows)
    values = _valid(choice.spec)["data"]["values"]
    assert len(values) == MAX_BARS + 1
    assert values[0] == {"category": f"c{MAX_BARS + 4:02d}", "total": MAX_BARS + 4}
    assert values[-1] == {"category": "Other (5)", "total": sum(range(5))}
    assert "the other 5 summed" in choice.reason


@pytest.mark.parametrize(
    ("columns", "rows", "reason"),
    [
        ([("count", "bigint")], [(747,)], "one value"),
        ([("a", "text"), ("b", "bigint")], [], "no rows"),
        (
            [("a", "text"), ("b", "text"), ("c", "text"), ("d", "bigint")],
            [(1, 2, 3, 4)],
            "4 columns",
        ),
        ([("name", "text"), ("email", "text")], [("Ada", "a@x")], "no chart fits"),
        ([("company_id", "integer"), ("name", "text")], [(1, "Acme")], "no chart fits"),
        ([("x", "numeric"), ("y", "numeric")], [(1, 2), (3, 4)], "fewer than 3 rows"),
    ],
    ids=["one-value", "no-rows", "wide", "text-only", "id-is-a-category", "short-scatter"],
)
def test_where_no_chart_fits_none_is_drawn_and_the_reason_says_why(columns, rows, reason):
    choice = choose_chart(columns, rows)
    assert (choice.kind, choice.spec, choice.vega_lite()) == ("none", None, "")
    assert reason in choice.reason


def test_dotted_and_repeated_column_names_become_safe_fields():
    choice = choose_chart([("t.name", "text"), ("t.name", "bigint")], [("a", 1), ("b", 2)])
    spec = _valid(choice.spec)
    assert {"t_name": "a", "t_name_2": 1} in spec["data"]["values"]
    assert spec["encoding"]["x"]["field"] == "t_name" and spec["encoding"]["x"]["title"] == "t.name"


def test_the_service_attaches_the_chart_to_every_result():
    columns = [pb.SqlColumn(name="industry", data_type="text"),
               pb.SqlColumn(name="total", data_type="numeric")]  # fmt: skip
    rows = [pb.SqlRow(values=[cpb.SqlValue(string_value="Retail"),
                              cpb.SqlValue(decimal_value="12.50")])] * 2  # fmt: skip
    drawn = chart(columns, rows)
    assert drawn.kind == pb.CHART_KIND_BAR and "total per industry" in drawn.reason
    assert _valid(json.loads(drawn.vega_lite))["data"]["values"][0]["total"] == 12.5
    lone = chart(columns[:1], rows[:1])
    assert (lone.kind, lone.vega_lite) == (pb.CHART_KIND_NONE, "")


def test_a_share_of_a_whole_reads_as_percentages():
    fractions = choose_chart(
        [("region", "text"), ("win_rate", "numeric")], [("EMEA", "0.25"), ("APAC", "0.5")]
    )
    y = _valid(fractions.spec)["encoding"]["y"]
    assert y["axis"] == {"format": ".0%"} and "share of the whole" in fractions.reason
    percents = choose_chart(
        [("region", "text"), ("percentage", "numeric")], [("EMEA", 25.0), ("APAC", 75.0)]
    )
    y = _valid(percents.spec)["encoding"]["y"]
    assert y["title"] == "percentage (%)" and "axis" not in y
    plain = choose_chart([("region", "text"), ("total", "numeric")], [("EMEA", 0.5), ("APAC", 1)])
    assert "axis" not in _valid(plain.spec)["encoding"]["y"]


def test_a_per_year_grouping_of_year_numbers_draws_a_time_axis():
    """ "Per year" shows the year's number (an integer, 2023): drawn as a line over time
    read as years, not bars of a category nor milliseconds after 1970."""
    rows = [(2024, 31), (2022, 12), (2023, 20)]
    choice = choose_chart([("year", "integer"), ("count", "bigint")], rows)
    assert (choice.kind, choice.reason) == ("line", "count over year")
    spec = _valid(choice.spec)
    assert [v["year"] for v in spec["data"]["values"]] == [2022, 2023, 2024]
    assert spec["data"]["format"] == {"parse": {"year": "date:'%Y'"}}
    assert spec["encoding"]["x"] == {
        "field": "year",
        "type": "temporal",
        "title": "year",
        "timeUnit": "year",
    }


def test_integers_not_named_a_year_or_not_years_stay_categories():
    rows = [(3, 4), (5, 6), (7, 9)]
    assert choose_chart([("years_working", "integer"), ("count", "bigint")], rows).kind == "scatter"
    assert choose_chart([("year", "integer"), ("count", "bigint")], [(1, 4), (2, 6)]).kind == "bar"
