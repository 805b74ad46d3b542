"""A grouped count of rows joined to the rows that refer to them counts each row once per
referring row, unless the groups are the referring rows' own: "How many orders has each
customer placed?" counted over ``order_details`` joined to ``orders`` and grouped by the
customer counts order lines (northwind, unseen-northwind-22, once the employee tables
changed which reading came first); grouped by the product the lines refer to ("How many
orders contain each product?"), each group is a set of lines, one per order, and stands.
The catalog is the store's (``test_sql_store_kinds``) with the real verifier."""

from __future__ import annotations

import pytest

from services.sql.linker import LinkError
from services.sql.verify._phrases import verify_statement
from tests.unit.sql.test_sql_store_kinds import _ctx

LINES_ORDERS = "public.order_details AS t0 JOIN public.orders AS t1 ON t1.order_id = t0.order_id"


def test_a_count_of_orders_grouped_by_their_customer_over_their_lines_is_refused() -> None:
    sql = (
        "SELECT t2.customer_id AS customer_id, t2.company_name AS company_name, "
        f"COUNT(*) AS count FROM {LINES_ORDERS} "
        "JOIN public.customers AS t2 ON t2.customer_id = t1.customer_id "
        "GROUP BY t2.customer_id, t2.company_name"
    )
    with pytest.raises(LinkError, match="once per order_details row"):
        verify_statement(_ctx("How many orders has each customer placed?"), sql)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (  # the orders themselves, grouped by their customer
            "How many orders has each customer placed?",
            "SELECT t1.customer_id AS customer_id, t1.company_name AS company_name, "
            "COUNT(*) AS count FROM public.orders AS t0 "
            "JOIN public.customers AS t1 ON t1.customer_id = t0.customer_id "
            "GROUP BY t1.customer_id, t1.company_name",
        ),
        (  # groups of lines: one line per order and product
            "How many orders contain each product?",
            "SELECT t2.product_name AS product_name, COUNT(*) AS count FROM public.orders AS t0 "
            "JOIN public.order_details AS t1 ON t1.order_id = t0.order_id "
            "JOIN public.products AS t2 ON t2.product_id = t1.product_id "
            "GROUP BY t2.product_name",
        ),
        (  # groups reached through the lines, two joins on (the singers per stadium shape)
            "How many orders contain products from each supplier?",
            "SELECT t3.company_name AS company_name, COUNT(*) AS count FROM public.orders AS t0 "
            "JOIN public.order_details AS t1 ON t1.order_id = t0.order_id "
            "JOIN public.products AS t2 ON t2.product_id = t1.product_id "
            "JOIN public.suppliers AS t3 ON t3.supplier_id = t2.supplier_id "
            "GROUP BY t3.company_name",
        ),
    ],
)
def test_orders_counted_themselves_or_per_what_their_lines_refer_to_pass(
    question: str, sql: str
) -> None:
    verify_statement(_ctx(question), sql)
