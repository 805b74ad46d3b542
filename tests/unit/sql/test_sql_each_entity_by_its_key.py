"""Issue 45 (s66): "each <table>" said with a verb after it ("How many orders has each
customer placed?") groups by the rows of the table named, shown by their labels, even
where the counted table's key column to it (``orders.customer_id``) scores past the
column lookup's threshold. That score is weighed against every other column name of the
database: on northwind, adding its employee and territory tables (more ``_id`` columns,
a lighter ``id``) turned the question from the customers with their company names into
the bare key, and the company name asked for was then no longer reached. The question on
the real northwind: ``tests/integration/sql/test_sql_northwind_each_entity.py``."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import QuestionLinker, Vocabulary
from services.sql.linker._references import names_only_its_target
from services.sql.linker._vocabulary import Col
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col, key

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        key("customer_id"), col("company_name", "text", ("Alfreds", "Around the Horn")),
        col("country", "text", ("Mexico", "France")),
    ),
    primary_key=("customer_id",),
)  # fmt: skip
EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(key("employee_id"), col("last_name", "text", ("Davolio", "Fuller"))),
    primary_key=("employee_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("customer_id"), key("employee_id"), col("order_date", "date"),
        col("freight", "numeric(10,2)"),
    ),
    primary_key=("order_id",),
    foreign_keys=(
        ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),
        ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),
    ),
)  # fmt: skip
REGION = TableInfo(
    "public", "region",
    columns=(key("region_id"), col("region_description", "text", ("Eastern", "Western"))),
    primary_key=("region_id",),
)  # fmt: skip
TERRITORIES = TableInfo(
    "public", "territories",
    columns=(
        key("territory_id"), col("territory_description", "text", ("Boston", "Bedford")),
        key("region_id"),
    ),
    primary_key=("territory_id",),
    foreign_keys=(ForeignKeyInfo(("region_id",), "public.region", ("region_id",)),),
)  # fmt: skip
EMPLOYEE_TERRITORIES = TableInfo(
    "public", "employee_territories",
    columns=(key("employee_id"), key("territory_id")),
    foreign_keys=(
        ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),
        ForeignKeyInfo(("territory_id",), "public.territories", ("territory_id",)),
    ),
)  # fmt: skip
SHOP = Catalog("shop", (CUSTOMERS, EMPLOYEES, ORDERS, REGION, TERRITORIES, EMPLOYEE_TERRITORIES))
TODAY = date(2026, 12, 1)


def test_a_key_named_by_more_than_its_target_stays_the_column():
    """The guard: words that name the key column beyond its target's name ("customer id")
    keep the column; a column of the named table itself other than its key is never
    replaced (its own key named by the table word alone is its rows: s67 nwfil,
    ``test_sql_sold_to_in_a_year``)."""
    vocab = Vocabulary(SHOP, JoinGraph(SHOP))
    ctx = QuestionLinker(
        "How many orders per customer?", vocab, TODAY, check=verify_statement
    ).context
    order_key = Col(ORDERS, ORDERS.columns[1])
    assert names_only_its_target(ctx, ["customer", "placed"], order_key, CUSTOMERS)
    assert not names_only_its_target(ctx, ["customer", "id"], order_key, CUSTOMERS)
    own = Col(CUSTOMERS, CUSTOMERS.columns[2])  # customers.country
    assert not names_only_its_target(ctx, ["customer", "placed"], own, CUSTOMERS)
