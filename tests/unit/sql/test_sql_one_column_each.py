"""Issue 45 (s67): two readings of one measure and a grouping said through a key.

"Which 3 ship countries had the most orders in 1998, and how many?" asks for one count
twice (the ranking ranks by it, "how many" shows it): the statement showed ``COUNT(*)``
in two columns, where the follow-up "top 3 only" after the counts shows it once. Two
identical expressions over the same rows are one column (``_composition.one_column_each``).

"What is the average freight per shipper of orders shipped to France?": the clause reader
grouped by ``orders.shipper_id``, the bare key, where "per shipper" alone groups by the
shippers with their names. "shipper of orders" names the key column only by naming the
table it points at (and its own table): the shippers' rows (``_references.grouped_rows``,
the one step both readers take)."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from tests.unit.sql.schemas import col, key, linked_sql

SHIPPERS = TableInfo(
    "public", "shippers",
    columns=(
        key("shipper_id"), col("company_name", "text", ("Speedy Express", "United Package")),
        col("phone", "text", ("(503) 555-9831", "(503) 555-3199")),
    ),
    primary_key=("shipper_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("shipper_id"), col("order_date", "date"),
        col("freight", "numeric(10,2)"), col("ship_country", "text", ("France", "Germany")),
    ),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("shipper_id",), "public.shippers", ("shipper_id",)),),
)  # fmt: skip
CATEGORIES = TableInfo(
    "public", "categories",
    columns=(key("category_id"), col("category_name", "text", ("Beverages", "Condiments"))),
    primary_key=("category_id",),
)  # fmt: skip
PRODUCTS = TableInfo(
    "public", "products",
    columns=(key("product_id"), col("product_name", "text", ("Chai", "Chang")), key("category_id")),
    primary_key=("product_id",),
    foreign_keys=(ForeignKeyInfo(("category_id",), "public.categories", ("category_id",)),),
)  # fmt: skip
ORDER_DETAILS = TableInfo(
    "public", "order_details",
    columns=(key("order_id"), key("product_id"), col("quantity")),
    primary_key=("order_id", "product_id"),
    foreign_keys=(
        ForeignKeyInfo(("order_id",), "public.orders", ("order_id",)),
        ForeignKeyInfo(("product_id",), "public.products", ("product_id",)),
    ),
)  # fmt: skip
SHOP = Catalog("shop", (SHIPPERS, ORDERS, CATEGORIES, PRODUCTS, ORDER_DETAILS))
TODAY = date(2026, 12, 1)


def test_the_count_ranked_by_and_asked_for_is_one_column():
    sql = linked_sql(
        "Which 3 ship countries had the most orders in 1998, and how many?", SHOP, TODAY
    )
    assert sql.count("COUNT(*)") == 1, sql
    assert "ORDER BY count DESC" in sql
    assert sql.endswith("LIMIT 3")


def test_two_different_measures_stay_two_columns():
    """The guard: only identical expressions are one; a count beside an average of the
    same rows keeps both."""
    sql = linked_sql("What is the number of orders and the average freight per ship country?",
                     SHOP, TODAY)  # fmt: skip
    assert "COUNT(*)" in sql
    assert "AVG(t0.freight)" in sql


def test_per_shipper_of_orders_groups_by_the_shippers():
    sql = linked_sql(
        "What is the average freight per shipper of orders shipped to France?", SHOP, TODAY
    )
    assert "JOIN public.shippers AS t1" in sql
    assert "GROUP BY t1.shipper_id, t1.company_name" in sql
    assert "GROUP BY t0.shipper_id" not in sql


def test_per_shipper_alone_reads_the_same():
    """What the rule makes the longer question agree with."""
    sql = linked_sql("What is the average freight per shipper?", SHOP, TODAY)
    assert "GROUP BY t1.shipper_id, t1.company_name" in sql


def test_each_product_category_goes_through_the_products():
    """The guard: "each product category" with order lines measured names
    ``products.category_id`` with the products' word, a table the lines reach on the way
    to the categories and not the measured rows: the grouping stays that column (the
    verifier asks "product" to be grouped), not refused as the categories' rows were."""
    sql = linked_sql("What is the total quantity sold for each product category?", SHOP, TODAY)
    assert "JOIN public.products AS t1" in sql
    assert "GROUP BY t1.category_id" in sql
