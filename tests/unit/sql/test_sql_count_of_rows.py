"""What "how many <noun>" counts (issue 45, s62): the rows, unless the question counts a
column's values. "How many payments were received per year?" on a schema with
payments_made and payments_received named a part of both tables' names; no one table
won, the word was matched to a column (payment_date) and the non-null dates were
counted, while the follow-up that regrouped "payments received" counted the rows. The
word names rows, so the rows of the table whose column it came nearest are counted. A
noun that names a column and no table ("how many desks") still counts the
column's values. Schema invented for the test (no dev set's)."""

from __future__ import annotations

from datetime import date

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)


def _loans(name: str) -> TableInfo:
    return TableInfo(
        "public",
        name,
        columns=(
            key("id"),
            col("loan_date", "date"),
            col("amount", "numeric"),
            col("desk", "text", ("counter", "kiosk")),
        ),
        primary_key=("id",),
    )


MEMBERS = TableInfo(
    "public",
    "members",
    columns=(key("id"), col("full_name", "text"), col("city", "text"), col("joined", "date")),
    primary_key=("id",),
)
LIBRARY = Catalog("library", (MEMBERS, _loans("loans_issued"), _loans("loans_returned")))


def _counts(question: str) -> list[exp.Count]:
    return list(linked_statement(question, LIBRARY, TODAY).find_all(exp.Count))


def test_a_noun_naming_rows_of_several_tables_counts_rows_not_a_column() -> None:
    counts = _counts("How many loans were returned per year?")
    assert len(counts) == 1
    assert isinstance(counts[0].this, exp.Star)


def test_a_noun_naming_a_column_and_no_table_counts_its_values() -> None:
    counts = _counts("How many desks are there in loans returned?")
    assert counts
    assert not any(isinstance(c.this, exp.Star) for c in counts)
