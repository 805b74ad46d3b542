"""Issue 45 (s68, measure): a measure the question spells as arithmetic of the columns of
one row ("total sales per employee in 1997, price times quantity less discount"), the
northwind v8 turns e3 and e11 and the unseen set's northwind-28.

- ``linker._measures.read_row_arith``: the aggregate the question asks over one
  expression of a row's columns (``SUM(unit_price * quantity * (1 - discount))``), not a
  product of sums; a discount taken from a product is a share when every stored value of
  it lies in [0, 1] (its extent), an amount otherwise; a phrase two columns of the row fit
  equally, or a column that holds no number, is refused.
- ``linker._measures.asked_aggregate``: the word the aggregate is said of ("total sales")
  names what is computed, not the stored value 'Sales Representative'.
- ``linker._lookup._ends_column_name``: "employee id" spells ``employee_id``; "id" is no
  stored region code 'Id' of the orders.
"""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 12, 1)


def number(name: str, extent: tuple[float, float], data_type: str = "numeric") -> ColumnInfo:
    """A numeric column with the least and greatest value the catalog read."""
    return ColumnInfo(name, data_type, True, extent=extent)


EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(
        key("employee_id"), col("last_name", "text", ("Davolio", "Fuller")),
        col("first_name", "text", ("Nancy", "Andrew")),
        col("title", "text", ("Sales Representative", "Vice President")),
    ),
    primary_key=("employee_id",),
)  # fmt: skip
CATEGORIES = TableInfo(
    "public", "categories",
    columns=(key("category_id"), col("category_name", "text", ("Beverages", "Seafood"))),
    primary_key=("category_id",),
)  # fmt: skip
PRODUCTS = TableInfo(
    "public", "products",
    columns=(
        key("product_id"), col("product_name", "text", ("Chai", "Chang")), key("category_id"),
        number("unit_price", (2.5, 263.5)),
    ),
    primary_key=("product_id",),
    foreign_keys=(ForeignKeyInfo(("category_id",), "public.categories", ("category_id",)),),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("employee_id"), col("order_date", "date"),
        col("ship_region", "text", ("Id", "RJ", "SP")),
    ),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),),
)  # fmt: skip


def details(discount: tuple[float, float]) -> TableInfo:
    """An order's lines; ``discount``: the extent of their stored discounts."""
    return TableInfo(
        "public", "order_details",
        columns=(
            key("order_id"), key("product_id"), number("unit_price", (2.0, 263.5)),
            number("quantity", (1, 130), "smallint"), number("discount", discount, "real"),
            col("note", "text", ("gift", "rush")),
        ),
        primary_key=("order_id", "product_id"),
        foreign_keys=(
            ForeignKeyInfo(("order_id",), "public.orders", ("order_id",)),
            ForeignKeyInfo(("product_id",), "public.products", ("product_id",)),
        ),
    )  # fmt: skip


def store(discount: tuple[float, float] = (0.0, 0.25)) -> Catalog:
    return Catalog("store", (EMPLOYEES, CATEGORIES, PRODUCTS, ORDERS, details(discount)))


NET = "SUM(t0.unit_price * t0.quantity * (1 - t0.discount))"


def test_a_product_less_a_discount_stored_as_a_share():
    """e3: one sum of each line's price times quantity less its share of discount; the
    price is the line's own (``products.unit_price`` is a row it refers to, not the row)."""
    sql = linked_sql(
        "total sales per employee in 1997, price times quantity less discount", store(), TODAY
    )
    assert NET in sql
    assert "GROUP BY t2.employee_id, t2.first_name, t2.last_name" in sql
    assert "t1.order_date >= '1997-01-01' AND t1.order_date < '1998-01-01'" in sql


def test_the_word_the_total_is_said_of_is_no_stored_value():
    """``asked_aggregate``: "sales" names the computed measure, not the employees whose
    title is 'Sales Representative'."""
    sql = linked_sql(
        "total sales per employee in 1997, price times quantity less discount", store(), TODAY
    )
    assert "Sales Representative" not in sql


def test_a_discount_stored_as_an_amount_is_subtracted():
    """The same words on data whose discounts reach 5.0 (an amount of money): the
    product less the amount, not less a share of it."""
    sql = linked_sql(
        "total sales per employee in 1997, price times quantity less discount",
        store(discount=(0.0, 5.0)),
        TODAY,
    )
    assert "SUM(t0.unit_price * t0.quantity - t0.discount)" in sql


def test_the_aggregate_the_question_asks_applies_to_the_row():
    sql = linked_sql("average sales per order, quantity multiplied by unit price", store(), TODAY)
    assert "AVG(t0.quantity * t0.unit_price)" in sql


def test_a_column_that_holds_no_number_is_refused():
    with pytest.raises(LinkError):
        linked_sql("total sales per employee, note times quantity", store(), TODAY)


def test_a_phrase_two_columns_of_the_row_fit_equally_is_refused():
    """Two prices on the line itself: "price" is not guessed."""
    twice = TableInfo(
        "public", "order_details",
        columns=(
            key("order_id"), number("list_price", (2.0, 90.0)),
            number("net_price", (1.0, 80.0)), number("quantity", (1, 130), "smallint"),
        ),
        primary_key=("order_id",),
        foreign_keys=(ForeignKeyInfo(("order_id",), "public.orders", ("order_id",)),),
    )  # fmt: skip
    catalog = Catalog("store", (EMPLOYEES, ORDERS, twice))
    with pytest.raises(LinkError):
        linked_sql("total sales per employee, price times quantity", catalog, TODAY)


def test_a_word_that_ends_a_column_name_is_no_stored_value():
    """``_ends_column_name``: "employee id" is ``employee_id``; 'Id' is a stored region."""
    sql = linked_sql("how many orders per employee id in 1997", store(), TODAY)
    assert "ship_region" not in sql
    assert "GROUP BY t0.employee_id" in sql


def test_an_aside_that_spells_arithmetic_is_not_split_into_items():
    """northwind-28: split at its comma, "less the discount" grouped by the discount and
    summed price times quantity alone, a confident wrong answer; the aside is refused."""
    with pytest.raises(LinkError):
        linked_sql(
            "What are the total sales (unit price times quantity, less the discount) of each "
            "product category?",
            store(),
            TODAY,
        )
