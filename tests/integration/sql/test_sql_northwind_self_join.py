"""Issue 45 (s67, selfj): on the real northwind (services/bench/devsets/sql-unseen, loaded
into the embedded Postgres as the eval loads it), a question about who reports to whom is
read through ``employees`` joined to itself along ``reports_to`` (``linker._self_join``):
a name said after "reports to" is the row referred to, and "the person they report to"
is shown beside each employee. Keyed, and with the keys dropped (s67 keyself): the name
``reports_to`` names no table, and the catalog finds the reference in the data's
hierarchy (``catalog._hierarchy``); before, "who reports to Andrew Fuller" was answered
keyless with Fuller's own ``reports_to``."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest

from services.bench.devsets.build_sql_unseen import HERE
from services.bench.sql_dataset import (
    LoadOptions,
    finish_loading,
    load_databases,
    load_dataset,
    only_half,
)
from services.sql.catalog import load_catalog
from tests.unit.sql.schemas import linked_sql

pytestmark = pytest.mark.integration

JOINED = "FROM public.employees AS t0 JOIN public.employees AS t1 ON t1.employee_id = t0.reports_to"


@pytest.mark.parametrize("keyless", [False, True])
async def test_who_reports_to_whom_reads_employees_joined_to_themselves(
    pg_url: str, keyless: bool
) -> None:
    dataset = only_half(load_dataset(HERE), "study")
    options = LoadOptions(drop_keys=keyless)
    urls = await load_databases(pg_url, dataset, options)
    await finish_loading(pg_url, dataset, options)
    async with await psycopg.AsyncConnection.connect(urls["northwind"]) as conn:
        catalog, _ = await load_catalog(conn, "northwind")
    sql = linked_sql("who reports to Andrew Fuller", catalog, date(2026, 12, 1))
    assert JOINED in sql
    assert "t1.first_name = 'Andrew'" in sql and "t1.last_name = 'Fuller'" in sql
    sql = linked_sql(
        "list each employee with the name of the person they report to", catalog, date(2026, 12, 1)
    )
    assert JOINED in sql
    assert "t1.first_name AS reports_to_first_name" in sql
