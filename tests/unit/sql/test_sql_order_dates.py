"""Which of a store's dates a window or a grain is placed on (issue 45, s66: nwmonth and
resref), read on orders that keep three dates (ordered, required, shipped).

- a date the words name in part is never placed below one they do not name at all: each
  unexplained word lowers a column's name score, so among many words a date named in part
  ("orders" of ``order_date``) scored below zero, under dates not named
  (``required_date``): "how many orders did Margaret Peacock take in 1997" counted the
  orders due in 1997 (northwind's employees, services/bench/golden/
  conversations_sql-unseen_v8.json, northwind-e7), and "orders … placed in 1996" went to
  ``required_date``.
- "in each month of 1996": the grain, its year the window (was refused: "the statement does
  not group by what follows 'each'", the phrase read as "month of 1996").
- a word spent on a grouped column names no date: "ship countries … in 1998" is the
  orders' year, not ``shipped_date``'s (and no shipper's 'Federal Shipping' says which).
- "orders shipped to each country" groups by the rows' own ``ship_country`` (the noun and
  the verb before it name it whole), not the customer's ``country``.
- a stored value of another table (a carrier's name 'Express Delivery') is no state of the
  counted rows: it says nothing of which of their dates is meant.
"""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary, read_question
from services.sql.linker._dates import date_column
from services.sql.linker._plan import Measure, Plan
from tests.unit.sql.schemas import col, key, linked_sql

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        key("customer_id"), col("company_name", "text", ("Alfreds", "Around the Horn")),
        col("city", "text", ("Berlin", "London")),
        col("country", "text", ("Argentina", "Mexico", "France")),
    ),
    primary_key=("customer_id",),
)  # fmt: skip
SHIPPERS = TableInfo(
    "public", "shippers",
    columns=(
        key("shipper_id"), col("company_name", "text", ("Speedy Express", "Federal Shipping")),
        col("phone", "text"),
    ),
    primary_key=("shipper_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("customer_id"), key("shipper_id"), col("order_date", "date"),
        col("required_date", "date"), col("shipped_date", "date"),
        col("freight", "numeric(10,2)"), col("ship_name", "text"),
        col("ship_city", "text", ("Berlin", "Lyon")),
        col("ship_country", "text", ("Argentina", "Mexico", "France")),
    ),
    primary_key=("order_id",),
    foreign_keys=(
        ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),
        ForeignKeyInfo(("shipper_id",), "public.shippers", ("shipper_id",)),
    ),
)  # fmt: skip
STORE = Catalog("store", (CUSTOMERS, SHIPPERS, ORDERS))
TODAY = date(2026, 11, 30)
ORDERED_1996 = "t0.order_date >= '1996-01-01' AND t0.order_date < '1997-01-01'"


@pytest.mark.parametrize(
    "question",
    [
        "How many orders were placed in each month of 1996?",
        "How many orders shipped by Federal Shipping were placed in each month of 1996?",
    ],
)
def test_each_month_of_a_year_groups_by_the_month_within_that_year(question: str):
    sql = linked_sql(question, STORE, TODAY)
    assert "GROUP BY DATE_TRUNC('month', t0.order_date)" in sql
    assert ORDERED_1996 in sql


def test_a_date_the_words_partly_name_is_not_placed_below_an_unnamed_one():
    sql = linked_sql("How many orders were placed in each month of 1996?", STORE, TODAY)
    assert "required_date" not in sql
    assert ORDERED_1996 in sql


def test_a_word_spent_on_the_grouped_column_names_no_date():
    sql = linked_sql(
        "Which 3 ship countries had the most orders in 1998, and how many?", STORE, TODAY
    )
    assert "GROUP BY t0.ship_country" in sql
    assert "t0.order_date >= '1998-01-01' AND t0.order_date < '1999-01-01'" in sql
    assert "shipped_date" not in sql


def test_shipped_in_a_year_is_still_the_shipping_date():
    """The guard: the verb said before the window names the date ("shipped in 1997"),
    also where the grouped column's words include the verb's."""
    for question in (
        "How many orders were shipped in 1997?",
        "How many orders were shipped to each country in 1997?",
    ):
        sql = linked_sql(question, STORE, TODAY)
        assert "t0.shipped_date >= '1997-01-01'" in sql, question


@pytest.mark.parametrize(
    "question",
    [
        "How many orders placed in 1998 were shipped to each country?",
        "How many orders were shipped to each country in 1998?",
    ],
)
def test_shipped_to_each_country_groups_by_the_rows_own_ship_country(question: str):
    sql = linked_sql(question, STORE, TODAY)
    assert "GROUP BY t0.ship_country" in sql
    assert "customers" not in sql


def test_each_city_said_without_the_rows_verb_stays_the_customers():
    """The guard: a noun alone ("in each city") is named as well by the customers' column
    (the better name); only the verb before it ('ship' of "shipped") names the orders'."""
    sql = linked_sql("How many orders are there in each city?", STORE, TODAY)
    assert "ship_city" not in sql


CARRIERS = TableInfo(
    "public", "carriers",
    columns=(key("carrier_id"), col("name", "text", ("Express Delivery", "Speedy Freight"))),
    primary_key=("carrier_id",),
)  # fmt: skip
PARCELS = TableInfo(
    "public", "parcels",
    columns=(
        key("parcel_id"), key("carrier_id"), col("sent_date", "date"),
        col("delivery_date", "date"), col("weight", "numeric(10,2)"),
    ),
    primary_key=("parcel_id",),
    foreign_keys=(ForeignKeyInfo(("carrier_id",), "public.carriers", ("carrier_id",)),),
)  # fmt: skip
POST = Catalog("post", (CARRIERS, PARCELS))


def test_another_tables_stored_value_names_no_date_of_the_counted_rows():
    """'Express Delivery' is a carrier's name: its word "delivery" is no state of a parcel
    (as 'Closed Won' is of a deal, whose closing date "won" names), so "per month" is
    the parcels' first date, not ``delivery_date`` (northwind: 'Federal Shipping' put the
    months of "orders … Federal Shipping carried" on ``shipped_date``)."""
    ctx = read_question(
        "How many parcels did Express Delivery carry per month?",
        Vocabulary(POST, JoinGraph(POST)),
        TODAY,
    )
    chosen = date_column(ctx, Plan(measures=[Measure("COUNT", table=PARCELS)]))
    assert chosen is not None
    assert chosen.column.name == "sent_date"


EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(
        key("employee_id"), col("last_name", "text", ("Peacock", "Fuller")),
        col("first_name", "text", ("Margaret", "Andrew")),
    ),
    primary_key=("employee_id",),
)  # fmt: skip
STAFFED_ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("employee_id"), col("order_date", "date"),
        col("required_date", "date"), col("shipped_date", "date"), col("freight", "numeric"),
    ),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),),
)  # fmt: skip
STAFFED_STORE = Catalog("store", (EMPLOYEES, STAFFED_ORDERS))


def test_a_year_after_many_words_bounds_the_date_they_name_in_part() -> None:
    sql = linked_sql("how many orders did Margaret Peacock take in 1997", STAFFED_STORE, TODAY)
    assert "t0.order_date >= '1997-01-01'" in sql, sql
    assert "required_date" not in sql, sql


def test_a_date_named_outright_still_wins() -> None:
    sql = linked_sql("how many orders were shipped in 1997", STAFFED_STORE, TODAY)
    assert "shipped_date >= '1997-01-01'" in sql, sql
