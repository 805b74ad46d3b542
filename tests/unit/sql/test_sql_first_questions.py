"""First questions of the follow-up scripts refused or answered wrong for grammar (issue
45, s60), each on a schema of its own (no dev set's):

- a value no join reaches from the measured rows is no condition on them ("the total
  amount of transactions": 'transaction' is a kind of notification, a table the
  transactions do not join);
- a stop word that completes a column's name said whole is kept ("discount value" is
  ``discount_value``, not ``discount_type`` as well);
- what rows are listed "with their …" is an item of the list."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)


def _key(name: str, data_type: str = "integer") -> ColumnInfo:
    return ColumnInfo(name, data_type, False)


def _sql(question: str, catalog: Catalog) -> str:
    return linked_statement(question, catalog, TODAY).sql()


def _outputs(question: str, catalog: Catalog) -> list[str]:
    return [e.alias_or_name for e in linked_statement(question, catalog, TODAY).expressions]


WALLET = Catalog(
    "wallet",
    (
        TableInfo(
            "public",
            "members",
            columns=(_key("member_id"), col("handle", "text", ("ada", "bo"))),
            primary_key=("member_id",),
        ),
        TableInfo(
            "public",
            "alerts",
            columns=(
                _key("alert_id"),
                col("member_id"),
                col("kind", "text", ("general", "promotion", "transfer")),
            ),
            primary_key=("alert_id",),
            foreign_keys=(ForeignKeyInfo(("member_id",), "public.members", ("member_id",)),),
        ),
        # no declared key to anything: polymorphic sender and receiver ids
        TableInfo(
            "public",
            "wallet_transfers_daily",
            columns=(
                _key("transfer_id"),
                col("amount", "numeric"),
                col("state", "text", ("failed", "pending", "success")),
                col("direction", "text", ("credit", "debit")),
            ),
            primary_key=("transfer_id",),
        ),
    ),
)


def test_a_value_no_join_reaches_is_no_condition_on_the_measured_rows() -> None:
    sql = _sql("What is the total amount of transfers for each state?", WALLET)
    assert "SUM(t0.amount)" in sql and "GROUP BY t0.state" in sql
    assert "alerts" not in sql and "WHERE" not in sql


def test_a_value_of_the_measured_rows_still_conditions_them() -> None:
    sql = _sql("What is the total amount of debit transfers for each state?", WALLET)
    assert "t0.direction = 'debit'" in sql and "alerts" not in sql


SHOP = Catalog(
    "shop",
    (
        TableInfo(
            "public",
            "vouchers",
            columns=(
                _key("voucher_id"),
                col("code", "text", ("SAVE10", "WELCOME")),
                col("discount_type", "text", ("percentage", "fixed_amount")),
                col("discount_value", "numeric"),
            ),
            primary_key=("voucher_id",),
        ),
    ),
)


def test_a_column_name_said_whole_keeps_its_stop_word() -> None:
    outputs = _outputs("List the codes and discount values of the percentage vouchers.", SHOP)
    assert "discount_value" in outputs and "code" in outputs


def test_the_other_column_of_the_shared_word_is_still_read_by_its_own_name() -> None:
    outputs = _outputs("List the voucher codes and their discount types.", SHOP)
    assert "discount_type" in outputs and "discount_value" not in outputs


def test_what_rows_are_listed_with_is_an_item() -> None:
    assert _outputs("List the voucher codes with their discount value.", SHOP) == [
        "code",
        "discount_value",
    ]


def test_with_and_no_possessive_is_still_a_condition() -> None:
    sql = _sql("List the voucher codes with a discount value above 20.", SHOP)
    assert "WHERE (t0.discount_value > 20)" in sql
