"""A superlative followed by "first" ("singers from France, oldest first") says the
order of every row, no cut (ISSUE-45, s61, fresh2): the clause reader read the word as
a ranking of one row, and the ranking check had removed "first" before looking for the
phrase that says the order, so the question was refused either way."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)
SINGER = TableInfo(
    "public", "singer",
    columns=(key("singer_id"), col("name", "text", ("Joe Sharp",)),
             col("country", "text", ("France", "Netherlands")), col("age")),
    primary_key=("singer_id",),
)  # fmt: skip
CATALOG = Catalog("concerts", (SINGER,))


@pytest.mark.parametrize(
    ("question", "order"),
    [
        ("List the singers from France, oldest first.", "ORDER BY age DESC"),
        ("List the singers, youngest first", "ORDER BY age ASC"),
    ],
)
def test_a_superlative_said_first_orders_every_row(question: str, order: str) -> None:
    sql = linked_sql(question, CATALOG, TODAY)
    assert order in sql
    assert "LIMIT" not in sql


def test_a_superlative_alone_still_ranks_and_cuts() -> None:
    """Negative: "the oldest singers" is the first of them, ranked and cut."""
    sql = linked_sql("List the oldest singers", CATALOG, TODAY)
    assert "ORDER BY age DESC" in sql
    assert "LIMIT 1" in sql


def test_a_superlative_no_column_says_is_still_refused() -> None:
    """Negative: "heaviest first" where nothing stores a weight orders by nothing."""
    with pytest.raises(LinkError):
        linked_sql("List the singers, heaviest first", CATALOG, TODAY)
