"""A table named without its qualifier, and a count said as a noun phrase (issue 45, s62):

- "wallet transactions" names ``wallet_transactions_daily``: ``daily`` ends other names
  of the schema too and is no table's whole name, so it qualifies the noun, as a
  warehouse's ``stg`` or ``2019`` qualifies a copy; never where another table is named by
  the same words, and never a copy over the plain table;
- "count of X by Y" is a count of X grouped by Y, as "How many X per Y" is; "by" and a
  value is no grouping."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo, unqualified_names
from services.sql.linker import LinkError
from services.sql.words import stem
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)

_TRANSACTIONS = (
    key("txid"),
    col("sender_id"),
    col("amount", "numeric"),
    col("status", "text", ("pending", "success", "failed")),
    col("type", "text", ("credit", "debit")),
    col("created_at", "timestamp"),
    col("transaction_ref", "text", ("a1b2", "c3d4")),
)


_WALLET_TRANSACTIONS = (stem("wallet"), stem("transactions"))


def _transactions(name: str) -> TableInfo:
    return TableInfo("wallet", name, columns=_TRANSACTIONS, primary_key=("txid",))


def _balances(name: str) -> TableInfo:
    return TableInfo(
        "wallet", name, columns=(col("user_id"), col("balance", "numeric"), col("updated_at"))
    )


_USERS = TableInfo(
    "wallet",
    "users",
    columns=(key("uid"), col("username", "text", ("ada", "bo")), col("status", "text")),
    primary_key=("uid",),
)
_MERCHANTS = TableInfo(
    "wallet",
    "merchants",
    columns=(key("mid"), col("name", "text", ("Acme", "Bolt")), col("category", "text")),
    primary_key=("mid",),
)

# "transaction" is also a kind of notice: the noun alone is a stored value as well, so
# only the table's name can say which rows "wallet transactions" are
_NOTICES = TableInfo(
    "wallet",
    "notices",
    columns=(key("notice_id"), col("user_id"), col("kind", "text", ("transaction", "promotion"))),
    primary_key=("notice_id",),
    foreign_keys=(ForeignKeyInfo(("user_id",), "wallet.users", ("uid",)),),
)

DAILY = Catalog(
    "ledger",
    (
        _USERS,
        _MERCHANTS,
        _NOTICES,
        _transactions("wallet_transactions_daily"),
        _balances("wallet_user_balance_daily"),
        _balances("wallet_merchant_balance_daily"),
    ),
)


def test_a_table_is_named_by_its_words_less_the_qualifier() -> None:
    sql = linked_sql("How many wallet transactions are there?", DAILY, TODAY)
    assert sql == "SELECT COUNT(*) AS count FROM wallet.wallet_transactions_daily AS t0"


def test_the_shorter_name_is_the_words_less_the_qualifier_only() -> None:
    names = unqualified_names(DAILY.tables)
    # "daily" ends three names, as "wallet" begins them: either end qualifies the noun
    assert _WALLET_TRANSACTIONS in names["wallet.wallet_transactions_daily"]
    assert all(len(short) == 2 for short in names["wallet.wallet_transactions_daily"])
    # two words less "daily" would leave one: the head noun, or not, is not told
    assert "wallet.users" not in names and "wallet.merchants" not in names


def test_two_tables_with_the_same_words_less_a_qualifier_name_neither() -> None:
    # no column whose name says "transaction" either: the count of such a column is the
    # list reader's own reading of the noun, not this rule's (left, issue 45)
    columns = tuple(c for c in _TRANSACTIONS if c.name != "transaction_ref")
    both = Catalog(
        "ledger",
        (
            _USERS,
            _MERCHANTS,
            _NOTICES,
            TableInfo("wallet", "wallet_transactions_daily", columns=columns),
            TableInfo("wallet", "wallet_transactions_monthly", columns=columns),
            _balances("wallet_user_balance_daily"),
        ),
    )
    for name in ("wallet.wallet_transactions_daily", "wallet.wallet_transactions_monthly"):
        assert _WALLET_TRANSACTIONS not in unqualified_names(both.tables).get(name, [])
    for question in ("How many wallet transactions are there?", "count of wallet transactions"):
        with pytest.raises(LinkError):
            linked_sql(question, both, TODAY)


def test_a_copy_is_never_named_over_the_plain_table() -> None:
    plain = Catalog(
        "ledger",
        (
            _USERS,
            _NOTICES,
            _transactions("wallet_transactions"),
            _transactions("wallet_transactions_daily"),
            _balances("wallet_user_balance_daily"),
        ),
    )
    assert _WALLET_TRANSACTIONS not in unqualified_names(plain.tables).get(
        "wallet.wallet_transactions_daily", []
    )
    sql = linked_sql("How many wallet transactions are there?", plain, TODAY)
    assert "FROM wallet.wallet_transactions AS t0" in sql


def test_a_marked_copy_gets_no_shorter_name_nor_keeps_its_table_from_one() -> None:
    copy = TableInfo(
        "wallet",
        "wallet_transactions_daily_archive",
        columns=_TRANSACTIONS,
        lookalike_of="wallet.wallet_transactions_daily",
    )
    names = unqualified_names((*DAILY.tables, copy))
    assert copy.qualified not in names
    assert _WALLET_TRANSACTIONS in names["wallet.wallet_transactions_daily"]


@pytest.mark.parametrize(
    "question",
    [
        "count of wallet transactions by status",
        "Count of wallet transactions per status",
        "How many wallet transactions by status?",
        "number of wallet transactions per status",
    ],
)
def test_a_count_by_a_column_groups_by_it(question: str) -> None:
    sql = linked_sql(question, DAILY, TODAY)
    assert "COUNT(*)" in sql and "GROUP BY t0.status" in sql
    assert "FROM wallet.wallet_transactions_daily AS t0" in sql


def test_count_of_said_first_is_a_count() -> None:
    sql = linked_sql("count of merchants", DAILY, TODAY)
    assert sql == "SELECT COUNT(*) AS count FROM wallet.merchants AS t0"


def test_by_a_value_is_no_grouping() -> None:
    try:
        sql = linked_sql("How many merchants by Acme?", DAILY, TODAY)
    except LinkError:
        return
    assert "GROUP BY" not in sql
