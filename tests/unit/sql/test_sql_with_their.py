"""What rows are listed "with their …" is asked for as an item of the list is: "List the
coupon codes that are percentage discounts with their discount value?" answered with the
codes alone was a confident wrong (defog v4 filter script, s59, after a refused first
turn). Refused naming the column; shown, it passes; "with" followed by no possessive
("coupons with a discount value above 20") is a condition, no item. On a schema of its
own."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col

TODAY = date(2026, 11, 30)
SHOP = Catalog(
    "shop",
    (
        TableInfo(
            "public",
            "coupons",
            columns=(
                ColumnInfo("coupon_id", "integer", False),
                col("code", "text", ("SAVE10", "WELCOME")),
                col("discount_type", "text", ("percentage", "fixed_amount")),
                col("discount_value", "numeric"),
            ),
            primary_key=("coupon_id",),
        ),
    ),
)
VOCABULARY = Vocabulary(SHOP, JoinGraph(SHOP))
QUESTION = "List the coupon codes that are percentage discounts with their discount value?"
WHERE = " FROM public.coupons AS t0 WHERE (t0.discount_type = 'percentage')"


def _verify(question: str, sql: str) -> None:
    verify_statement(read_question(question, VOCABULARY, TODAY), sql)


def test_a_column_listed_with_their_and_not_shown_is_refused() -> None:
    with pytest.raises(LinkError, match="discount value; the statement shows no discount_value"):
        _verify(QUESTION, f"SELECT t0.code AS code{WHERE}")


def test_shown_it_passes() -> None:
    _verify(QUESTION, f"SELECT t0.code AS code, t0.discount_value AS discount_value{WHERE}")


def test_with_and_no_possessive_is_a_condition_not_an_item() -> None:
    _verify(
        "List the coupon codes with a discount value above 20.",
        "SELECT t0.code AS code FROM public.coupons AS t0 WHERE (t0.discount_value > 20)",
    )
