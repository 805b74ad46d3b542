"""A filter that is a bare bound on the earlier breakdown's one measure
(``conversation._measure.bare_bound``; Issue 45, s67 nwfil, northwind v8 e10#3): "only
those with more than 40" after "how many different customers did each employee sell to in
1997" keeps the employees whose count passes 40, the count still shown. The words name no
column, so the linker (a fake of its seam that reads nothing) places nothing."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built

EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(
        ColumnInfo("employee_id", "integer", False), ColumnInfo("last_name", "text", True),
        ColumnInfo("salary", "numeric", True),
    ),
    primary_key=("employee_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        ColumnInfo("order_id", "integer", False), ColumnInfo("customer_id", "integer", True),
        ColumnInfo("employee_id", "integer", True), ColumnInfo("order_date", "date", True),
    ),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),),
)  # fmt: skip
CATALOG = Catalog("store", (EMPLOYEES, ORDERS))
PER_EMPLOYEE = (
    "SELECT t1.employee_id, t1.last_name, COUNT(DISTINCT t0.customer_id) AS count "
    "FROM public.orders AS t0 JOIN public.employees AS t1 ON t1.employee_id = t0.employee_id "
    "WHERE (t0.order_date >= '1997-01-01' AND t0.order_date < '1998-01-01') "
    "GROUP BY t1.employee_id, t1.last_name"
)


async def _nothing(question: str) -> str | None:
    return None


async def _filtered(sql: str, condition: str) -> str:
    prior = Prior(sql, Relation.FILTER, condition=condition)
    return (await built(sql, prior, CATALOG, _nothing))[0]


@pytest.mark.parametrize(
    ("condition", "having"),
    [
        ("with more than 40", "COUNT(DISTINCT t0.customer_id) > 40"),
        ("those with at least 40", "COUNT(DISTINCT t0.customer_id) >= 40"),
        ("under 5", "COUNT(DISTINCT t0.customer_id) < 5"),
    ],
)
async def test_a_bare_bound_keeps_the_groups_whose_one_measure_passes(condition, having):
    got = await _filtered(PER_EMPLOYEE, condition)
    want = f"{PER_EMPLOYEE} HAVING ({having})"
    assert sqlglot.parse_one(got, dialect="postgres") == sqlglot.parse_one(
        want, dialect="postgres"
    ), got


@pytest.mark.parametrize(
    "sql",
    [
        f"{PER_EMPLOYEE} ORDER BY count DESC LIMIT 3",  # cut: other rows than these
        PER_EMPLOYEE.replace("AS count", "AS count, MAX(t0.order_date) AS last"),  # two
        PER_EMPLOYEE.replace("t1.last_name,", "t1.last_name, t1.salary,", 1).replace(
            "GROUP BY t1.employee_id, t1.last_name",
            "GROUP BY t1.employee_id, t1.last_name, t1.salary",
        ),  # a stored number shown beside the measure: the bound may be its
        "SELECT t1.last_name FROM public.employees AS t1",  # no groups, no measure
    ],
)
async def test_no_bare_bound_where_the_measure_is_not_the_one_figure(sql):
    with pytest.raises(FollowUpError):
        await _filtered(sql, "with more than 40")


async def test_a_bound_with_a_noun_after_it_is_not_bare():
    """ "with more than 40 orders" says what is counted: left to the linker's reading."""
    with pytest.raises(FollowUpError):
        await _filtered(PER_EMPLOYEE, "with more than 40 orders")
