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
