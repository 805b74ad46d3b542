"""A listing of the earlier rows' codes alone lists each code once (conversation._once):
the rows cannot be told apart, so a code repeated per row is a duplicate."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import listed_once, restrict, subject

AIRPORTS = TableInfo(
    "public", "airports",
    columns=(ColumnInfo("faa", "text", False), ColumnInfo("name", "text", False),
             ColumnInfo("alt", "integer", True)),
    primary_key=("faa",),
)  # fmt: skip
FLIGHTS = TableInfo(
    "public", "flights",
    columns=(
        ColumnInfo("flight_id", "integer", False),
        ColumnInfo("flight", "integer", False),
        ColumnInfo("origin", "text", False),
        ColumnInfo("dest", "text", False),
        ColumnInfo("air_time", "integer", True),
    ),
    primary_key=("flight_id",),
    foreign_keys=(
        ForeignKeyInfo(("origin",), "public.airports", ("faa",)),
        ForeignKeyInfo(("dest",), "public.airports", ("faa",)),
    ),
)  # fmt: skip
CATALOG = Catalog("air", (FLIGHTS, AIRPORTS))
AMONG = (
    " FROM public.flights AS t0 WHERE t0.flight_id IN (SELECT e.flight_id FROM "
    "public.flights AS e WHERE e.air_time > 300)"
)


def _same(left: str, right: str) -> None:
    assert sqlglot.parse_one(left, dialect="postgres") == sqlglot.parse_one(
        right, dialect="postgres"
    ), left


@pytest.mark.parametrize("shown", ["t0.dest", "t0.dest AS dest", "t0.origin, t0.dest"])
def test_codes_of_the_earlier_rows_alone_are_listed_once(shown: str) -> None:
    _same(listed_once(f"SELECT {shown}{AMONG}", CATALOG), f"SELECT DISTINCT {shown}{AMONG}")


@pytest.mark.parametrize(
    "sql",
    [
        f"SELECT t0.air_time{AMONG}",  # a figure of each row: rows repeat legitimately
        f"SELECT t0.flight, t0.dest{AMONG}",  # the rows are told apart by their number
        f"SELECT t0.flight_id{AMONG}",  # the rows' own key
        f"SELECT t0.dest, COUNT(*){AMONG} GROUP BY t0.dest",  # already one row per code
        "SELECT t1.name FROM public.flights AS t0 JOIN public.airports AS t1 "
        "ON t1.faa = t0.dest",  # a column of another table
        "SELECT t0.alt FROM public.airports AS t0 WHERE t0.faa = 'JFK'",
    ],
)
def test_a_listing_that_tells_rows_apart_is_left_as_it_is(sql: str) -> None:
    assert listed_once(sql, CATALOG) == sql


def test_the_codes_of_rows_a_result_reference_kept_are_listed_once() -> None:
    """As the engine builds it: the linked listing restricted to the earlier rows (a
    sub-query of their keys), then each code once; the earlier rows stay the same."""
    earlier = (
        "SELECT COUNT(*) FROM public.flights AS t0 JOIN public.airports AS t1 "
        "ON t1.faa = t0.dest WHERE t1.alt > 5000"
    )
    about = subject(earlier, CATALOG)
    kept = restrict("SELECT t0.origin FROM public.flights AS t0", earlier, about)
    once = listed_once(kept, CATALOG)
    tree = sqlglot.parse_one(once, dialect="postgres")
    assert tree.args.get("distinct") is not None
    tree.set("distinct", None)
    assert tree == sqlglot.parse_one(kept, dialect="postgres")
