"""Inferred join edges checked against the data when the catalog loads: a name that only
looks like a reference is dropped, a real reference with a few orphans is kept."""

from __future__ import annotations

import psycopg
import pytest

from services.sql import introspect
from services.sql._joins import JoinGraph, refute_joins
from services.sql._warehouse import database_url

pytestmark = pytest.mark.integration


async def test_the_data_refutes_an_edge_that_only_the_names_suggest(pg_url):
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_joins")
        await admin.execute("CREATE DATABASE tandem_joins")
    url = database_url(pg_url, "tandem_joins")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE customer (customer_id int PRIMARY KEY, name text)")
        await conn.execute("CREATE TABLE item (item_id int PRIMARY KEY, label text)")
        # no declared keys: both edges are inferred from the names
        await conn.execute(
            "CREATE TABLE orders (order_id int PRIMARY KEY, customer_id int, item_id int)"
        )
        await conn.execute("INSERT INTO customer SELECT g, 'c' || g FROM generate_series(1, 50) g")
        await conn.execute("INSERT INTO item SELECT g, 'i' || g FROM generate_series(1, 5) g")
        # customer ids are real (one orphan: dirty data); item_id holds catalogue numbers
        # that are no keys of item at all
        await conn.execute(
            "INSERT INTO orders SELECT g, CASE WHEN g = 7 THEN 999 ELSE 1 + g % 50 END, "
            "1000 + g FROM generate_series(1, 300) g"
        )
        await conn.execute("ANALYZE")
        catalog = await introspect(conn, "joins")
        named = {(e.child_column, e.parent) for e in JoinGraph(catalog).edges}
        assert named == {("customer_id", "public.customer"), ("item_id", "public.item")}
        checked = await refute_joins(conn, catalog)
    assert checked.refuted_joins == {
        ("public.orders", "item_id", "public.item", "item_id"),
    }
    kept = {(e.child_column, e.parent) for e in JoinGraph(checked).edges}
    assert kept == {("customer_id", "public.customer")}
