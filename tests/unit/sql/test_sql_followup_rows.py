"""Issue 45 (s65, fol2): a follow-up whose rows are the earlier answer's rows, read by keys
and types where the linker placed none of its words. "what do they add up to" after a
count of payments, "who got those" after unread notifications per type, "how many orders
did they place" after a list of customers were refused ("could not place 'add'"): the
earlier statement's ``FROM``/``WHERE`` is a set of one table's rows, and the question
asks for its one amount summed, the one table those rows refer to, or a count of the
table that refers to them."""

from __future__ import annotations

import pytest

from services.sql.catalog._catalog import (
    Catalog,
    ForeignKeyInfo,
    JoinInfo,
    JoinOrigin,
    TableInfo,
)
from services.sql.conversation import FollowUpError, rows_asked
from tests.unit.sql.schemas import col, key
from tests.unit.sql.statements import assert_same_sql

PAYMENTS = TableInfo(
    "public", "payments_received",
    columns=(
        key("id"), key("sale_id"), col("payment_date", "date"),
        col("payment_amount", "numeric(10,2)"),
        col("payment_method", "text", ("cash", "check", "credit_card")),
    ),
    primary_key=("id",),
)  # fmt: skip
USERS = TableInfo(
    "consumer_div", "users",
    columns=(key("uid"), col("username", "text", ("alice", "bob")), col("email", "text")),
    primary_key=("uid",),
)  # fmt: skip
MERCHANTS = TableInfo(
    "consumer_div", "merchants",
    columns=(key("mid"), col("name", "text", ("Acme", "Globex"))),
    primary_key=("mid",),
)  # fmt: skip
NOTIFICATIONS = TableInfo(
    "consumer_div", "notifications",
    columns=(
        key("id"), key("user_id"), col("message", "text"),
        col("type", "text", ("transaction", "promotion")),
        col("status", "text", ("unread", "read", "archived")),
    ),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("user_id",), "consumer_div.users", ("uid",)),),
)  # fmt: skip
WALLET = Catalog("ewallet", (USERS, MERCHANTS, NOTIFICATIONS, PAYMENTS))

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        key("customer_id"), col("company_name", "text", ("Alfreds", "Around the Horn")),
        col("country", "text", ("Argentina", "Mexico")),
    ),
    primary_key=("customer_id",),
)  # fmt: skip
SHIPPERS = TableInfo(
    "public", "shippers",
    columns=(key("shipper_id"), col("company_name", "text", ("Speedy Express",))),
    primary_key=("shipper_id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        key("order_id"), key("customer_id"), key("shipper_id"),
        col("freight", "numeric(10,2)"), col("ship_country", "text", ("Argentina",)),
    ),
    primary_key=("order_id",),
)  # fmt: skip
KEYS = (
    ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),
    ForeignKeyInfo(("shipper_id",), "public.shippers", ("shipper_id",)),
)


def _store(declared: bool) -> Catalog:
    """The store with its references declared, or only inferred by the catalog."""
    if declared:
        orders = TableInfo(ORDERS.schema, ORDERS.name, columns=ORDERS.columns,
                           primary_key=ORDERS.primary_key, foreign_keys=KEYS)  # fmt: skip
        return Catalog("store", (CUSTOMERS, SHIPPERS, orders))
    joins = tuple(
        JoinInfo("public.orders", fk.columns, fk.referenced_table, fk.referenced_columns,
                 JoinOrigin.INFERRED)
        for fk in KEYS
    )  # fmt: skip
    return Catalog("store", (CUSTOMERS, SHIPPERS, ORDERS), joins=joins)


BY_CHECK = (
    "SELECT COUNT(*) AS count FROM public.payments_received AS t0 "
    "WHERE (t0.payment_method = 'check')"
)
UNREAD_PER_TYPE = (
    "SELECT t0.type AS type, COUNT(*) AS count FROM consumer_div.notifications AS t0 "
    "WHERE (t0.status = 'unread') GROUP BY t0.type"
)
IN_ARGENTINA = (
    "SELECT t0.company_name AS company_name FROM public.customers AS t0 "
    "WHERE (t0.country = 'Argentina')"
)


def _asked(question: str, earlier: str, catalog: Catalog) -> str:
    found = rows_asked(question, earlier, catalog)
    assert found is not None
    return found[0]


def test_the_rows_a_count_counted_add_up_to_their_one_amount():
    assert_same_sql(
        _asked("what do they add up to", BY_CHECK, WALLET),
        "SELECT SUM(t0.payment_amount) AS sum_payment_amount "
        "FROM public.payments_received AS t0 WHERE (t0.payment_method = 'check')",
    )


def test_rows_with_no_one_amount_are_refused_naming_the_amounts():
    two = TableInfo(
        PAYMENTS.schema, PAYMENTS.name,
        columns=(*PAYMENTS.columns, col("fee", "numeric(10,2)")),
        primary_key=PAYMENTS.primary_key,
    )  # fmt: skip
    with pytest.raises(FollowUpError, match="payment_amount, fee"):
        rows_asked("what do they add up to", BY_CHECK, Catalog("ewallet", (two,)))


def test_a_count_per_group_is_not_summed():
    # "add them up" after counts per type could mean the counts: no reading
    assert rows_asked("what do they add up to", UNREAD_PER_TYPE, WALLET) is None


def test_who_asks_for_the_one_table_the_counted_rows_refer_to():
    assert_same_sql(
        _asked("who got those", UNREAD_PER_TYPE, WALLET),
        "SELECT t1.username FROM consumer_div.users AS t1 WHERE t1.uid IN "
        "(SELECT t0.user_id FROM consumer_div.notifications AS t0 "
        "WHERE (t0.status = 'unread'))",
    )


@pytest.mark.parametrize("declared", [True, False])
def test_rows_referring_to_two_tables_need_the_noun_of_one(declared: bool):
    orders = "SELECT t0.order_id AS order_id FROM public.orders AS t0 WHERE t0.freight > 100"
    with pytest.raises(FollowUpError, match=r"customers, public\.shippers"):
        rows_asked("who shipped them", orders, _store(declared))
    assert_same_sql(
        _asked("which shippers carried them", orders, _store(declared)),
        "SELECT t1.company_name FROM public.shippers AS t1 WHERE t1.shipper_id IN "
        "(SELECT t0.shipper_id FROM public.orders AS t0 WHERE t0.freight > 100)",
    )


@pytest.mark.parametrize("declared", [True, False])
def test_how_many_counts_the_rows_that_refer_to_the_listed_rows(declared: bool):
    assert_same_sql(
        _asked("how many orders did they place", IN_ARGENTINA, _store(declared)),
        "SELECT COUNT(*) AS count FROM public.orders AS t1 WHERE t1.customer_id IN "
        "(SELECT t0.customer_id FROM public.customers AS t0 WHERE (t0.country = 'Argentina'))",
    )


def test_a_counted_table_that_refers_to_nothing_listed_is_refused():
    with pytest.raises(FollowUpError, match=r"shippers refers to .* customers rows by no key"):
        rows_asked("how many shippers did they use", IN_ARGENTINA, _store(True))


def test_a_list_cut_by_a_limit_keeps_its_order_and_limit():
    top = IN_ARGENTINA + " ORDER BY t0.company_name LIMIT 2"
    assert_same_sql(
        _asked("how many orders did they place", top, _store(True)),
        "SELECT COUNT(*) AS count FROM public.orders AS t1 WHERE t1.customer_id IN "
        "(SELECT t0.customer_id FROM public.customers AS t0 WHERE (t0.country = 'Argentina') "
        "ORDER BY t0.company_name LIMIT 2)",
    )


@pytest.mark.parametrize(
    "earlier",
    [
        # rows of two tables joined: which table's rows "they" are is not one
        "SELECT t0.company_name, COUNT(*) AS count FROM public.customers AS t0 "
        "JOIN public.orders AS t1 ON t1.customer_id = t0.customer_id GROUP BY t0.company_name",
        # groups cut by a limit: the rows are the groups', not the table's
        "SELECT t0.country, COUNT(*) AS count FROM public.customers AS t0 GROUP BY t0.country "
        "ORDER BY count DESC LIMIT 3",
    ],
)
def test_an_earlier_statement_over_no_one_tables_rows_has_no_reading(earlier: str):
    assert rows_asked("how many orders did they place", earlier, _store(True)) is None


def test_a_question_of_none_of_these_forms_has_no_reading():
    assert rows_asked("what are their emails", UNREAD_PER_TYPE, WALLET) is None
