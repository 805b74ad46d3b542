"""Wrong-answer kinds found on a store-shaped study database (northwind in
services/bench/devsets/sql-unseen: customers, orders and their lines, products,
suppliers), each refused naming why while the right statement for the same question
passes. The catalog here is the shape of the real one, with its keys."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.gate import parse_statements
from services.sql.linker import LinkContext, LinkError, Vocabulary, read_question
from services.sql.verify._fanned_measure import check_fanned_measure
from services.sql.verify._outputs import check_outputs
from services.sql.verify._phrases import verify_statement
from services.sql.verify._statement import read_statement


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


def _party(key: str) -> tuple[ColumnInfo, ...]:
    return (_col(key, "integer"), _col("company_name"), _col("city"), _col("country"))


STORE = Catalog(
    "store",
    (
        TableInfo(
            "public",
            "customers",
            columns=_party("customer_id"),
            primary_key=("customer_id",),
        ),
        TableInfo(
            "public",
            "suppliers",
            columns=_party("supplier_id"),
            primary_key=("supplier_id",),
        ),
        TableInfo(
            "public",
            "shippers",
            columns=(_col("shipper_id", "integer"), _col("company_name"), _col("phone")),
            primary_key=("shipper_id",),
        ),
        TableInfo(
            "public",
            "products",
            columns=(
                _col("product_id", "integer"),
                _col("product_name"),
                _col("supplier_id", "integer"),
                _col("unit_price", "numeric"),
            ),
            primary_key=("product_id",),
            foreign_keys=(ForeignKeyInfo(("supplier_id",), "public.suppliers", ("supplier_id",)),),
        ),
        TableInfo(
            "public",
            "orders",
            columns=(
                _col("order_id", "integer"),
                _col("customer_id", "integer"),
                _col("order_date", "date"),
                _col("freight", "numeric"),
            ),
            primary_key=("order_id",),
            foreign_keys=(ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),),
        ),
        TableInfo(
            "public",
            "order_details",
            columns=(
                _col("order_id", "integer"),
                _col("product_id", "integer"),
                _col("quantity", "integer"),
            ),
            primary_key=("order_id", "product_id"),
            foreign_keys=(
                ForeignKeyInfo(("order_id",), "public.orders", ("order_id",)),
                ForeignKeyInfo(("product_id",), "public.products", ("product_id",)),
            ),
        ),
    ),
)
VOCABULARY = Vocabulary(STORE, JoinGraph(STORE))
ORDER_LINES = "public.orders AS t0 JOIN public.order_details AS t1 ON t1.order_id = t0.order_id"


def _ctx(question: str) -> LinkContext:
    return read_question(question, VOCABULARY, date(2026, 11, 30))


def _fanned(question: str, sql: str) -> None:
    tree = parse_statements(sql, shared=True)[0]
    check_fanned_measure(_ctx(question), tree, read_statement(tree, STORE))


def _outputs(question: str, sql: str) -> None:
    tree = parse_statements(sql, shared=True)[0]
    check_outputs(_ctx(question), tree, read_statement(tree, STORE))


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (
            "What is the total freight charged on all orders?",
            f"SELECT SUM(t0.freight) AS sum_freight FROM {ORDER_LINES}",
        ),
        (  # an average is weighted by the lines the same way
            "What is the average freight of the orders?",
            f"SELECT AVG(t0.freight) AS avg_freight FROM {ORDER_LINES}",
        ),
        (  # grouped by the parent's own column: still once per line
            "What is the total freight per customer?",
            f"SELECT t0.customer_id, SUM(t0.freight) FROM {ORDER_LINES} GROUP BY t0.customer_id",
        ),
    ],
)
def test_a_measure_summed_over_the_rows_that_refer_to_it_is_refused(
    question: str, sql: str
) -> None:
    with pytest.raises(LinkError, match="once per order_details row"):
        _fanned(question, sql)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (
            "What is the total freight charged on all orders?",
            "SELECT SUM(t0.freight) AS sum_freight FROM public.orders AS t0",
        ),
        (  # the referring table's own measure: each line once
            "What is the total quantity ordered?",
            f"SELECT SUM(t1.quantity) FROM {ORDER_LINES}",
        ),
        (  # grouped by a column of the referring rows: each order once per product
            "What is the total freight of the orders holding each product?",
            f"SELECT t1.product_id, SUM(t0.freight) FROM {ORDER_LINES} GROUP BY t1.product_id",
        ),
        (  # grouped by a table reached through them: one freight per order line's product
            "What is the average freight of the orders holding each product name?",
            f"SELECT t2.product_name, AVG(t0.freight) FROM {ORDER_LINES} JOIN public.products "
            "AS t2 ON t2.product_id = t1.product_id GROUP BY t2.product_name",
        ),
        (  # the lines a bridge to the products filtered: rows related through them
            "What is the total freight of the orders holding Chai?",
            f"SELECT SUM(t0.freight) FROM {ORDER_LINES} JOIN public.products AS t2 "
            "ON t2.product_id = t1.product_id WHERE t2.product_name = 'Chai'",
        ),
        (  # over distinct values
            "What is the sum of the distinct freights?",
            f"SELECT SUM(DISTINCT t0.freight) FROM {ORDER_LINES}",
        ),
        (  # the parent joined to the table it refers to: one customer per order
            "What is the total freight?",
            "SELECT SUM(t0.freight) FROM public.orders AS t0 JOIN public.customers AS t1 "
            "ON t1.customer_id = t0.customer_id",
        ),
    ],
)
def test_a_measure_the_join_does_not_repeat_passes(question: str, sql: str) -> None:
    _fanned(question, sql)


CUSTOMERS_TO_SUPPLIERS = (
    "public.orders AS s1 JOIN public.order_details AS s2 ON s2.order_id = s1.order_id "
    "JOIN public.products AS s3 ON s3.product_id = s2.product_id "
    "JOIN public.suppliers AS s4 ON s4.supplier_id = s3.supplier_id"
)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (  # "a customer or a supplier": the rows of two tables, singular after "a"
            "List every country that has a customer or a supplier.",
            "SELECT DISTINCT t0.country FROM public.customers AS t0 "
            "JOIN public.orders AS t1 ON t1.customer_id = t0.customer_id "
            "JOIN public.order_details AS t2 ON t2.order_id = t1.order_id "
            "JOIN public.products AS t3 ON t3.product_id = t2.product_id "
            "JOIN public.suppliers AS t4 ON t4.supplier_id = t3.supplier_id",
        ),
        (  # "customers but no suppliers", related through a subquery correlated on a key
            "Which cities have customers but no suppliers?",
            "SELECT t0.city FROM public.customers AS t0 WHERE NOT EXISTS(SELECT 1 FROM "
            f"{CUSTOMERS_TO_SUPPLIERS} WHERE s1.customer_id = t0.customer_id)",
        ),
    ],
)
def test_two_tables_coordinated_and_related_by_keys_are_refused(question: str, sql: str) -> None:
    with pytest.raises(LinkError, match="rows of two tables"):
        _outputs(question, sql)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (
            "List every country that has a customer or a supplier.",
            "SELECT country FROM public.customers UNION SELECT country FROM public.suppliers",
        ),
        (  # the cities compared by value: no row related to another by a key
            "Which cities have customers but no suppliers?",
            "SELECT t0.city FROM public.customers AS t0 WHERE NOT t0.city IN "
            "(SELECT s0.city FROM public.suppliers AS s0)",
        ),
        (
            "Which cities have customers but no suppliers?",
            "SELECT city FROM public.customers EXCEPT SELECT city FROM public.suppliers",
        ),
        (  # a singular noun without "a" is an item, not rows listed
            "Show the name of the customer and supplier country.",
            "SELECT t0.company_name, t4.country FROM public.customers AS t0 "
            "JOIN public.orders AS t1 ON t1.customer_id = t0.customer_id "
            "JOIN public.order_details AS t2 ON t2.order_id = t1.order_id "
            "JOIN public.products AS t3 ON t3.product_id = t2.product_id "
            "JOIN public.suppliers AS t4 ON t4.supplier_id = t3.supplier_id",
        ),
    ],
)
def test_two_tables_coordinated_and_read_apart_pass(question: str, sql: str) -> None:
    _outputs(question, sql)


def test_a_number_of_after_a_column_word_is_that_column_not_a_count() -> None:
    # "phone number of" names the phone column read; it counts nothing
    verify_statement(
        _ctx("Show the company name and phone number of every shipper."),
        "SELECT t0.company_name AS company_name, t0.phone AS phone FROM public.shippers AS t0",
    )


@pytest.mark.parametrize(
    "question",
    [
        "What is the number of shippers?",
        # "number of" after a word of no column read is still a count
        "Show the total number of shippers.",
        # the phone read, but "how many" still asks for a count
        "How many shippers have a phone number?",
    ],
)
def test_a_number_of_that_asks_for_a_count_still_needs_one(question: str) -> None:
    with pytest.raises(LinkError, match="counts nothing"):
        verify_statement(
            _ctx(question),
            "SELECT t0.company_name AS company_name, t0.phone AS phone FROM public.shippers AS t0",
        )
