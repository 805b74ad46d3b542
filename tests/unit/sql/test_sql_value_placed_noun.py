"""Issue 45 (s65, fol4): a value stored in the columns of two tables is the one of the table
the noun said right before "in/from/at <value>" names. "How many orders did the customers
in Argentina place?" was read as ``orders.ship_country = 'Argentina'`` (the counted table's
column) and refused by the verifier (the statement uses nothing 'customers' names):
'Argentina' is stored in both ``customers.country`` and ``orders.ship_country``, and "the
customers in Argentina" says whose property it is. Where no noun places it ("orders
shipped to Argentina") the counted table's column stays."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary, link_question, read_question
from tests.unit.sql.schemas import col, key, linked_sql

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        key("customer_id"), col("company_name", "text", ("Alfreds", "Around the Horn")),
        col("country", "text", ("Argentina", "Mexico")),
    ),
    primary_key=("customer_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("customer_id"), col("freight", "numeric(10,2)"),
        col("ship_country", "text", ("Argentina", "Mexico")),
    ),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),),
)  # fmt: skip
STORE = Catalog("store", (CUSTOMERS, ORDERS))
TODAY = date(2026, 11, 30)


@pytest.mark.parametrize(
    "question",
    [
        "How many orders did the customers in Argentina place?",
        "How many orders did customers from Argentina place?",
    ],
)
def test_the_noun_before_in_a_value_names_the_table_holding_it(question: str):
    sql = linked_sql(question, STORE, TODAY)
    assert "t1.country = 'Argentina'" in sql or ".country = 'Argentina'" in sql
    assert "ship_country" not in sql


def test_a_value_no_noun_places_stays_on_the_counted_table():
    sql = linked_sql("How many orders were shipped to Argentina?", STORE, TODAY)
    assert "ship_country = 'Argentina'" in sql


@pytest.mark.parametrize(
    "question",
    [
        "How many orders did the customers in Argentina place?",
        "How many orders did customers from Argentina place?",
    ],
)
def test_the_list_reading_places_the_value_on_the_noun_before_it_too(question: str):
    """The list-oriented reading (tried where the clause reader's statement is refused)
    scores the columns holding a value by the words near it; the noun placed at the value
    says its table, over the counted table's own column."""
    ctx = read_question(question, Vocabulary(STORE, JoinGraph(STORE)), TODAY)
    sql = " ".join(link_question(ctx).sql.split())
    assert ".country = 'Argentina'" in sql
    assert "ship_country" not in sql
