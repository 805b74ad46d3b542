"""Issue 45 (s66): on the real northwind (services/bench/devsets/sql-unseen, loaded into
the embedded Postgres as the eval loads it), "How many orders has each customer placed?
Give the company name and the count." groups by the customers, shown with their company
names. Once northwind held its employee and territory tables, the words "customer placed"
scored ``orders.customer_id`` past the column lookup's threshold (more ``_id`` columns
weigh ``id`` less), the grouping became the bare key and the company name was no longer
reached: the question was read through ``order_details`` (wrong) or refused. The rule:
``linker._references.names_only_its_target``."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest

from services.bench.devsets.build_sql_unseen import HERE
from services.bench.sql_dataset import load_databases, load_dataset
from services.sql.catalog import load_catalog
from tests.unit.sql.schemas import linked_sql

pytestmark = pytest.mark.integration


async def test_each_customer_placed_groups_by_the_customers_with_their_company_names(
    pg_url: str,
) -> None:
    urls = await load_databases(pg_url, load_dataset(HERE))
    async with await psycopg.AsyncConnection.connect(urls["northwind"]) as conn:
        catalog, _ = await load_catalog(conn, "northwind")
    sql = linked_sql(
        "How many orders has each customer placed? Give the company name and the count.",
        catalog,
        date(2026, 12, 1),
    )
    assert "FROM public.orders AS t0 JOIN public.customers AS t1" in sql
    assert "t1.company_name" in sql
    assert "order_details" not in sql


async def test_per_shipper_of_orders_groups_by_the_shippers_as_per_shipper_alone(
    pg_url: str,
) -> None:
    """Issue 45 (s67): the spelled-out form of northwind v7's c4#2 grouped by the bare key
    ``orders.shipper_id`` (the clause reader took "shipper of orders" as that column);
    "per shipper" names the shippers, shown by their names (``_references.grouped_rows``).
    The count ranked by and asked for ("the most orders …, and how many?") is one column
    (``_composition.one_column_each``)."""
    urls = await load_databases(pg_url, load_dataset(HERE))
    async with await psycopg.AsyncConnection.connect(urls["northwind"]) as conn:
        catalog, _ = await load_catalog(conn, "northwind")
    today = date(2026, 12, 1)
    sql = linked_sql(
        "What is the average freight per shipper of orders shipped to France?", catalog, today
    )
    assert "GROUP BY t1.shipper_id, t1.company_name" in sql
    ranked = linked_sql(
        "Which 3 ship countries had the most orders in 1998, and how many?", catalog, today
    )
    assert ranked.count("COUNT(*)") == 1
