"""Confident wrongs that the third round of first-question probes found (ISSUE-45, s63):
"What is the most expensive car of each make?" answered with the one most expensive car
of all, and "What share of transactions failed?" answered with the failed transactions'
``shares`` column listed. Shown on catalogs shaped as car_dealership and broker are,
through the real linker and verifier."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)

CARS = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            columns=(
                key("id"),
                col("make", "text", ("Toyota", "Ford")),
                col("model", "text", ("Camry", "Mustang")),
                col("cost", "numeric"),
            ),
            primary_key=("id",),
        ),
    ),
)

# sbtransaction as broker's is: a number of shares per trade, and a status
TRADES = Catalog(
    "broker",
    (
        TableInfo(
            "public",
            "customers",
            columns=(key("cust_id"), col("name", "text", ("Jane Smith", "Bob Johnson"))),
            primary_key=("cust_id",),
        ),
        TableInfo(
            "public",
            "transactions",
            columns=(
                key("tx_id"),
                key("cust_id"),
                col("shares", "numeric"),
                col("status", "text", ("success", "fail", "pending")),
            ),
            primary_key=("tx_id",),
            foreign_keys=(ForeignKeyInfo(("cust_id",), "public.customers", ("cust_id",)),),
        ),
    ),
)


def test_a_pick_within_each_group_is_not_one_pick_over_all_rows() -> None:
    """ "the car with the highest cost for each make": one car per make, never the single
    most expensive car cut by ``LIMIT 1``. Answered, the statement picks per make (a window,
    a grouping or a sub-query per make); otherwise refused, naming the group word."""
    try:
        sql = linked_sql("Which car has the highest cost for each make?", CARS, TODAY)
    except LinkError as refused:
        assert "'make'" in str(refused)
        return
    assert "PARTITION BY" in sql or "GROUP BY" in sql or sql.count("SELECT") > 1


def test_a_pick_over_all_rows_still_answers_one_row() -> None:
    """No group said: the one car with the highest cost."""
    assert "LIMIT 1" in linked_sql("Which car has the highest cost?", CARS, TODAY)


def test_a_share_of_rows_divides_or_is_refused() -> None:
    """ "What share of transactions failed?": a part of the transactions, per hundred or
    per one; the ``shares`` column the word spells, listed, is no answer."""
    try:
        sql = linked_sql("What share of transactions failed?", TRADES, TODAY)
    except LinkError as refused:
        assert "share of transactions" in str(refused)
        return
    assert "/" in sql


def test_a_column_of_shares_is_still_read() -> None:
    """ "shares" said as the column, with no part of the rows asked, is read."""
    sql = linked_sql("What is the sum of shares of transactions with status fail?", TRADES, TODAY)
    assert "SUM(" in sql and "shares" in sql


MUSEUMS = Catalog(
    "museums",
    (
        TableInfo(
            "public",
            "museum",
            columns=(
                key("museum_id"),
                col("name", "text", ("Plaza Museum", "RiverPark Museum")),
                col("num_of_staff"),
            ),
            primary_key=("museum_id",),
        ),
    ),
)


def test_the_largest_row_is_a_row_not_its_size() -> None:
    """ "What is the largest museum by staff?": the museum, not the largest staff count
    alone. Answered, the statement shows the museum; otherwise refused."""
    try:
        sql = linked_sql("What is the largest museum by staff?", MUSEUMS, TODAY)
    except LinkError as refused:
        assert "largest museum" in str(refused)
        return
    assert "name" in sql.split(" FROM ")[0]


def test_the_largest_value_is_still_a_value() -> None:
    """ "the largest number of staff" is a value: the maximum alone answers it."""
    sql = linked_sql("What is the largest number of staff in a museum?", MUSEUMS, TODAY)
    assert "MAX(t0.num_of_staff)" in sql
