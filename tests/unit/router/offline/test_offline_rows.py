"""SQL rows stated so a person can read them: buckets labelled at their grain and in time
order, measures with separators, identifiers and years left as stored."""

from __future__ import annotations

import pytest

from services.common.llm import RowSet
from services.router.offline._rows import state_rows

# "total won amount per quarter in 2024" as the SQL service returned it: out of order,
# timestamps for quarters, exact decimals as text.
QUARTERS = RowSet(
    "r1",
    ("quarter", "sum_amount"),
    (
        ("2024-10-01T00:00:00", "6381913.12"),
        ("2024-07-01T00:00:00", "5120000.50"),
        ("2024-01-01T00:00:00", "4000000"),
        ("2024-04-01T00:00:00", "4500000.10"),
    ),
)


def _said(rowset: RowSet, question: str = "") -> str:
    sentences = state_rows(rowset, question)
    assert all(s.citations == (rowset.id,) for s in sentences)
    return " ".join(s.text for s in sentences)


def test_quarters_read_in_order_at_their_grain_with_grouped_money():
    assert _said(QUARTERS, "What is the total won amount per quarter in 2024?") == (
        "4 rows: quarter: 2024-Q1, sum amount: 4,000,000; "
        "quarter: 2024-Q2, sum amount: 4,500,000.10; "
        "quarter: 2024-Q3, sum amount: 5,120,000.50; "
        "quarter: 2024-Q4, sum amount: 6,381,913.12. "
        "Highest: 2024-Q4 (6,381,913.12); lowest: 2024-Q1 (4,000,000); rising every quarter."
    )


def test_a_question_that_asks_for_an_order_keeps_the_statements():
    said = _said(QUARTERS, "Which quarter had the highest total won amount?")
    assert said.index("2024-Q4") < said.index("2024-Q3") < said.index("2024-Q1")
    assert "rising" not in said and "falling" not in said  # not in time order: no trend


def test_the_headline_is_computed_from_the_rows_and_only_where_it_fits():
    regions = RowSet("r", ("region", "total_amount"), (("EMEA", 5), ("APAC", 9), ("AMER", 7)))
    assert _said(regions).endswith("Highest: APAC (9); lowest: EMEA (5).")
    falling = RowSet(
        "r",
        ("month", "count"),
        (("2024-01-01", 9), ("2024-02-01", 7), ("2024-03-01", 2)),
    )
    assert _said(falling).endswith("falling every month.")
    two = RowSet("r", ("region", "total_amount"), (("EMEA", 5), ("APAC", 9)))
    assert "Highest" not in _said(two)  # two rows say it already
    several = RowSet("r", ("region", "total", "count"), (("A", 1, 2), ("B", 3, 4), ("C", 5, 6)))
    assert "Highest" not in _said(several)  # which measure? none is guessed


@pytest.mark.parametrize(
    ("column", "values", "labels"),
    [
        ("created", ("2024-03-01T00:00:00", "2024-01-01T00:00:00"), ("2024-01", "2024-03")),
        ("period", ("2023-01-01T00:00:00", "2024-01-01T00:00:00"), ("2023", "2024")),
        ("day", ("2024-07-16T00:00:00", "2024-07-15T00:00:00"), ("2024-07-15", "2024-07-16")),
        ("order_month", ("2024-02-01", "2024-01-01"), ("2024-01", "2024-02")),
        (
            "at",
            ("2024-07-15T09:30:00", "2024-07-15T08:05:00"),
            ("2024-07-15 08:05", "2024-07-15 09:30"),
        ),
    ],
    ids=["month-from-values", "year-from-values", "day", "month-from-name", "time"],
)
def test_each_grain_is_labelled_and_ordered(column, values, labels):
    rows = RowSet("r", (column, "count"), tuple((v, 1) for v in values))
    said = _said(rows)
    assert said.index(labels[0]) < said.index(labels[1])
    assert "T00:00:00" not in said


def test_identifiers_and_years_stay_as_stored_and_lone_values_read_as_labels():
    rows = RowSet("r", ("company_id", "year", "total"), ((12345, 2024, 1234567),))
    assert _said(rows) == "1 row: company id: 12345, year: 2024, total: 1,234,567."
    assert _said(RowSet("r", ("count_all",), ((747,),))) == "Count: 747."
    assert _said(RowSet("r", ("avg_amount",), (("48250.456",),))) == "Average amount: 48,250.46."
    assert _said(RowSet("r", ("name",), (("Acme",), ("Globex",)))) == (
        "2 rows: name: Acme; name: Globex."
    )
    assert _said(RowSet("r", ("a",), ())) == "The query returned no rows."


def test_a_per_year_grouping_of_year_numbers_reads_as_time():
    """A grouping per year shows the year's number (2023, ``EXTRACT(YEAR …)``), not a date:
    still put in time order, stated as stored and its trend said, like a date's year."""
    per_year = RowSet(
        "r",
        ("year", "count"),
        ((2024, 31), (2022, 12), (2023, "20")),
    )
    assert _said(per_year, "How many payments were received per year?") == (
        "3 rows: year: 2022, count: 12; year: 2023, count: 20; year: 2024, count: 31. "
        "Highest: 2024 (31); lowest: 2022 (12); rising every year."
    )
    # the intents' name for it (``sale_date_year``) reads the same
    named = RowSet("r", ("sale_date_year", "total"), ((2024, 1), (2023, 2), (2022, 3)))
    assert _said(named).endswith("falling every year.")


@pytest.mark.parametrize(
    ("column", "values"),
    [("years_working", (12, 3, 7)), ("year", (3, 1, 2)), ("fiscal", (2024, 2022, 2023))],
    ids=["a-count-of-years", "not-four-digit-years", "not-named-a-year"],
)
def test_a_number_is_time_only_when_named_a_year_and_holding_years(column, values):
    said = _said(RowSet("r", (column, "count"), tuple((v, i) for i, v in enumerate(values))))
    label = column.replace("_", " ")
    first, second = (f"{label}: {v}," for v in values[:2])
    assert said.index(first) < said.index(second)  # the statement's order, not sorted
    assert "every" not in said
