"""Issue 45 (s67, nwfil): northwind v8 e10 on a store's employees, customers and orders.

"how many different customers did each employee sell to in 1998" counts customers per
employee; a customer meets an employee only through an order, so 1998 is the orders'
(``orders.order_date``). The window went on the grouped employees' first date
(``employees.birth_date``) and the data refused it ("no row meets every condition").

- ``linker._dates.dated_in_order``: the dates of a table that relates the measured rows
  to the grouped ones (it refers to a table beside it on the join path) come after the
  measured tables' and before the grouped ones'.
- ``verify._bounded``: a bound on a table no word names is no other event where that
  table refers to two tables the question names (an order relates the employee and the
  customer named).
- ``linker._references.names_only_its_target``: "each employee sell to" names the
  employees' own key by the table word alone; the grouping is the employees shown by
  their labels, not the bare key.
- ``linker._mentions._plural_of_several`` (e6#3): "sales representatives" is the stored
  'Sales Representative', where one word of it ("representative") is held by two columns
  (a customer's contact title too) and names neither.
"""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.linker._dates import date_column
from services.sql.linker._plan import Dim, Measure, Plan
from services.sql.linker._references import names_only_its_target
from services.sql.linker._vocabulary import Col
from tests.unit.sql.schemas import col, key, linked_sql

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        key("customer_id"), col("company_name", "text", ("Alfreds", "Around the Horn")),
        col("contact_title", "text", ("Sales Representative", "Assistant Sales Representative",
                                      "Sales Agent", "Owner")),
        col("country", "text", ("Germany", "UK")),
    ),
    primary_key=("customer_id",),
)  # fmt: skip
EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(
        key("employee_id"), col("last_name", "text", ("Davolio", "Fuller")),
        col("first_name", "text", ("Nancy", "Andrew")),
        col("title", "text", ("Sales Representative", "Vice President, Sales")),
        col("birth_date", "date"), col("hire_date", "date"),
        col("country", "text", ("USA", "UK")),
    ),
    primary_key=("employee_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("customer_id"), key("employee_id"), col("order_date", "date"),
        col("required_date", "date"), col("shipped_date", "date"),
    ),
    primary_key=("order_id",),
    foreign_keys=(
        ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),
        ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),
    ),
)  # fmt: skip
STORE = Catalog("store", (CUSTOMERS, EMPLOYEES, ORDERS))
TODAY = date(2026, 12, 1)
SOLD_1998 = "t0.order_date >= '1998-01-01' AND t0.order_date < '1999-01-01'"


def test_the_window_of_a_count_through_orders_is_the_orders_date():
    """``dated_in_order``: the orders relate the counted customers to the grouped
    employees; without it the employees' ``birth_date`` (their first date) is chosen."""
    question = "how many different customers did each employee sell to in 1998"
    ctx = read_question(question, Vocabulary(STORE, JoinGraph(STORE)), TODAY)
    plan = Plan(
        measures=[Measure("COUNT_DISTINCT", table=CUSTOMERS)],
        dims=[Dim(Col(EMPLOYEES, EMPLOYEES.columns[0]))],
    )
    chosen = date_column(ctx, plan)
    assert chosen is not None
    assert (chosen.table.name, chosen.column.name) == ("orders", "order_date")


def test_customers_each_employee_sold_to_in_a_year_are_counted_over_that_years_orders():
    """End to end: the orders' year (``dated_in_order``), not refused by the bounded-event
    check (``_bounded._relates_named``), grouped by the employees with their names
    (``names_only_its_target`` on the table's own key)."""
    sql = linked_sql("how many different customers did each employee sell to in 1998", STORE, TODAY)
    assert SOLD_1998 in sql
    assert "birth_date" not in sql
    assert "COUNT(DISTINCT t0.customer_id)" in sql
    assert "t1.first_name" in sql and "t1.last_name" in sql


def test_a_date_the_words_name_on_the_grouped_rows_still_wins():
    """The guard: "hired in 1994" names the employees' ``hire_date`` (its verb), whatever
    table relates them to the counted rows."""
    sql = linked_sql("how many orders did the employees hired in 1994 take?", STORE, TODAY)
    assert "hire_date >= '1994-01-01'" in sql


def test_the_tables_own_key_named_by_the_table_word_alone_is_the_tables_rows():
    """``names_only_its_target`` on the table's own key: "employee sell to" names
    ``employees.employee_id`` by "employee" alone ("sell" names nothing of it), so the
    grouping is the employees with their labels. On the real northwind the column lookup
    scores the key past its threshold for these words (weights relative to the whole
    schema); ``tests/integration/sql/test_sql_northwind_sold_to.py`` is that end to end."""
    vocab = Vocabulary(STORE, JoinGraph(STORE))
    ctx = read_question("how many different customers did each employee sell to", vocab, TODAY)
    own_key = Col(EMPLOYEES, EMPLOYEES.columns[0])
    assert names_only_its_target(ctx, ["employee", "sell"], own_key, EMPLOYEES)
    assert not names_only_its_target(ctx, ["employee", "id"], own_key, EMPLOYEES)
    last_name = Col(EMPLOYEES, EMPLOYEES.columns[1])
    assert not names_only_its_target(ctx, ["employee", "sell"], last_name, EMPLOYEES)


def test_each_employee_id_is_still_the_key():
    """The guard: words that name the key beyond the table ("employee id") keep the
    column (the orders' reference, grouped as it is), not the employees' rows."""
    sql = linked_sql("how many orders are there for each employee id?", STORE, TODAY)
    assert "GROUP BY t0.employee_id" in sql
    assert "JOIN public.employees AS t1" not in sql


PLACES = TableInfo(
    "public", "places",
    columns=(key("place_id"), col("name", "text", ("Lyon", "Leeds")), col("founded", "date")),
    primary_key=("place_id",),
)  # fmt: skip
SHOPS = TableInfo(
    "public", "shops",
    columns=(key("shop_id"), key("place_id"), col("name", "text", ("Corner", "Main"))),
    primary_key=("shop_id",),
    foreign_keys=(ForeignKeyInfo(("place_id",), "public.places", ("place_id",)),),
)  # fmt: skip
CLERKS = TableInfo(
    "public", "clerks",
    columns=(
        key("clerk_id"), key("place_id"), col("name", "text", ("Ann", "Bo")),
        col("born", "date"),
    ),
    primary_key=("clerk_id",),
    foreign_keys=(ForeignKeyInfo(("place_id",), "public.places", ("place_id",)),),
)  # fmt: skip
TOWN = Catalog("town", (PLACES, SHOPS, CLERKS))


def test_a_table_both_sides_refer_to_is_no_record_relating_them():
    """The guard: shops and clerks both refer to a place; the place's founding date is
    no event of theirs, so it does not come before the grouped clerks' own date."""
    ctx = read_question(
        "how many shops are there for each clerk in 1998",
        Vocabulary(TOWN, JoinGraph(TOWN)),
        TODAY,
    )
    plan = Plan(
        measures=[Measure("COUNT", table=SHOPS)], dims=[Dim(Col(CLERKS, CLERKS.columns[0]))]
    )
    chosen = date_column(ctx, plan)
    assert chosen is not None
    assert chosen.table.name == "clerks"


def test_a_bound_on_a_table_referring_to_one_named_table_is_still_refused():
    """The guard of ``_relates_named``: the awards case the check was written for (a
    bound on a date of people, who refer to nothing the question names) still refuses."""
    people = TableInfo(
        "public", "people",
        columns=(key("person_id"), col("name", "text", ("Ann",)), col("debut", "date")),
        primary_key=("person_id",),
    )  # fmt: skip
    awards = TableInfo(
        "public", "awards",
        columns=(key("award_id"), key("person_id"), col("award_year", "integer")),
        primary_key=("award_id",),
        foreign_keys=(ForeignKeyInfo(("person_id",), "public.people", ("person_id",)),),
    )  # fmt: skip
    catalog = Catalog("prizes", (people, awards))
    try:
        sql = linked_sql("Which people won an award in 2016?", catalog, TODAY)
    except LinkError:
        return
    assert "debut" not in sql


@pytest.mark.parametrize(
    "question",
    [
        "Which employees are sales representatives?",
        "How many employees are Sales Representatives?",
        "how many employees that are sales representatives work in each country?",
    ],
)
def test_a_stored_value_of_several_words_said_in_the_plural_is_that_value(question):
    """``_mentions._plural_of_several`` (northwind v8 e6#3, "only sales representatives"
    after a count per country: the follow-up asks the linker "Which employees are sales
    representatives?"): the phrase's last word in the singular is the stored value."""
    sql = linked_sql(question, STORE, TODAY)
    assert "t0.title = 'Sales Representative'" in sql
