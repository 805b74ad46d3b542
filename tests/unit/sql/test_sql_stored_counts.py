"""A "number of <things>" a column stores (issue 45, s59): "the average length of boats
for each number of masts" groups by ``boats.masts``, the count each boat stores, and is
no longer refused for counting nothing, and "the average number of crew" averages
``boats.num_of_crew``; a "number of" no stored count answers still needs its count."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)

FLEET = Catalog(
    "fleet",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                ColumnInfo("boat_id", "integer", False),
                col("name", "text", ("Aurora", "Selkie")),
                col("masts"),
                col("length"),
                col("num_of_crew"),
                col("rig", "text", ("sloop", "ketch")),
                ColumnInfo("year", "integer", True, span=(1960, 2020)),
            ),
            primary_key=("boat_id",),
        ),
    ),
)


def test_a_number_of_things_a_column_stores_is_that_column() -> None:
    tree = linked_statement(
        "What is the average length of boats for each number of masts?", FLEET, TODAY
    )
    assert [c.name for c in tree.args["group"].expressions] == ["masts"]
    assert tree.find(exp.Avg) is not None


def test_an_aggregate_of_a_number_a_column_stores_reads_that_column() -> None:
    # "number of crew" is ``num_of_crew``, not a count of its distinct values: the
    # average stays the column's, with the condition after it
    tree = linked_statement(
        "What is the average number of crew of boats built before 2000?", FLEET, TODAY
    )
    average = tree.find(exp.Avg)
    assert average is not None and average.this.name == "num_of_crew"
    assert "t0.year < 2000" in tree.args["where"].sql(dialect="postgres")


def test_a_number_of_things_no_column_stores_still_needs_a_count() -> None:
    context = read_question(
        "What is the number of rigs of the boats?", Vocabulary(FLEET, JoinGraph(FLEET)), TODAY
    )
    with pytest.raises(LinkError, match="counts nothing"):
        verify_statement(context, "SELECT t0.rig AS rig FROM public.boats AS t0")
    # a key stores no count: "the number of boats" listed by their ids counts nothing
    context = read_question(
        "What is the number of boats?", Vocabulary(FLEET, JoinGraph(FLEET)), TODAY
    )
    with pytest.raises(LinkError, match="counts nothing"):
        verify_statement(context, "SELECT t0.boat_id AS boat_id FROM public.boats AS t0")
