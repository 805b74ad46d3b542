"""Issue 45 (s67, nwfil): on the real northwind (services/bench/devsets/sql-unseen, loaded
into the embedded Postgres as the eval loads it), "how many different customers did each
employee sell to in 1998" counts each employee's customers over the orders of 1998, the
employees shown by their names. It was refused by the data: the year went on
``employees.birth_date`` (the grouped rows' first date, ``linker._dates.dated_in_order``),
and once on ``orders.order_date`` the grouping was the bare key: on this schema the
column lookup scores ``employees.employee_id`` past its threshold for "employee sell"
(``linker._references.names_only_its_target``). And "only sales representatives" is
placed on ``employees.title`` ('Sales Representative'): ``customers.contact_title``
holds the phrase too, so only the phrase said whole places it
(``linker._mentions._plural_of_several``)."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest

from services.bench.devsets.build_sql_unseen import HERE
from services.bench.sql_dataset import load_databases, load_dataset
from services.sql.catalog import load_catalog
from tests.unit.sql.schemas import linked_sql

pytestmark = pytest.mark.integration


async def test_customers_each_employee_sold_to_in_a_year(pg_url: str) -> None:
    urls = await load_databases(pg_url, load_dataset(HERE))
    async with await psycopg.AsyncConnection.connect(urls["northwind"]) as conn:
        catalog, _ = await load_catalog(conn, "northwind")
    today = date(2026, 12, 1)
    question = "how many different customers did each employee sell to in 1998"
    sql = linked_sql(question, catalog, today)
    assert "t0.order_date >= '1998-01-01' AND t0.order_date < '1999-01-01'" in sql
    assert "birth_date" not in sql
    assert "first_name" in sql and "last_name" in sql
    sql = linked_sql("Which employees are sales representatives?", catalog, today)
    assert "t0.title = 'Sales Representative'" in sql
