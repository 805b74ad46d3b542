"""A reference that names its rows points at the turn whose rows they are (issue 45, s65):
"what categories are those products in" after "top 5 products by quantity sold" and then
"who supplies them?" (the suppliers of those products) named the products of the first
answer, but was built on the latest one, the suppliers, and refused ("not read about
suppliers"). The rows a statement returns are of the table its first selected column is
read from; a noun that names that table (the same stem) names that turn's rows, and the
router builds on that turn's statement. A noun that names the latest answer's table, or
no turn's, builds on the latest answer as before."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import Relation, resolve

TOP_PRODUCTS = PriorTurn(
    "top 5 products by quantity sold",
    "top 5 products by quantity sold",
    row_count=5,
    sql="SELECT t1.product_id AS product_id, t1.product_name AS product_name, "
    "SUM(t0.quantity) AS sum_quantity FROM public.order_details AS t0 JOIN public.products "
    "AS t1 ON t1.product_id = t0.product_id GROUP BY t1.product_id, t1.product_name "
    "ORDER BY sum_quantity DESC LIMIT 5",
)
SUPPLIERS = PriorTurn(
    "who supplies them?",
    "Who supplies the previous answer's rows?",
    row_count=5,
    sql="SELECT DISTINCT t0.company_name AS company_name FROM public.suppliers AS t0 "
    "JOIN public.products AS t1 ON t1.supplier_id = t0.supplier_id WHERE t1.product_id IN "
    "(SELECT earlier.product_id FROM (SELECT earlier_t1.product_id AS product_id "
    "FROM public.order_details AS earlier_t0 JOIN public.products AS earlier_t1 "
    "ON earlier_t1.product_id = earlier_t0.product_id) AS earlier)",
)


def test_those_products_after_their_suppliers_are_the_earlier_products() -> None:
    resolution = resolve("what categories are those products in", [TOP_PRODUCTS, SUPPLIERS])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation is Relation.RESULT_SET
    assert resolution.builds_on.sql == TOP_PRODUCTS.sql


@pytest.mark.parametrize(
    "question",
    [
        "what countries are those suppliers in",  # the latest answer's own rows
        "what countries are those companies in",  # a noun no turn's table is
        "which of them are in Germany?",  # no noun: the latest answer
    ],
)
def test_other_references_build_on_the_latest_answer(question: str) -> None:
    resolution = resolve(question, [TOP_PRODUCTS, SUPPLIERS])
    assert resolution.builds_on is not None
    assert resolution.builds_on.sql == SUPPLIERS.sql


def test_a_count_said_with_the_noun_is_the_named_turns() -> None:
    # five products, not the three suppliers of the latest answer
    three = PriorTurn(SUPPLIERS.question, SUPPLIERS.resolved_question, row_count=3,
                      sql=SUPPLIERS.sql)  # fmt: skip
    resolution = resolve("what categories are those 5 products in", [TOP_PRODUCTS, three])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on is not None
    assert resolution.builds_on.sql == TOP_PRODUCTS.sql
