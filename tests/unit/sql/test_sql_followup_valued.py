"""A filter that compares what the earlier rows are worth (conversation._valued): "only
the ones worth more than 20" puts the comparison on the one value the earlier answer
shows per row (or its one measure per group); with no such value, or two, it is refused.
The linker is a fake of its seam that reads nothing, as no column is named "worth"."""

from __future__ import annotations

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built

COUPONS = TableInfo(
    "consumer_div", "coupons",
    columns=(
        ColumnInfo("cid", "bigint", False),
        ColumnInfo("merchant_id", "bigint", False),
        ColumnInfo("code", "character varying", False),
        ColumnInfo("discount_value", "numeric", False),
        ColumnInfo("max_discount_amount", "numeric", True),
        ColumnInfo("num_redemptions", "integer", True),
        ColumnInfo("start_year", "integer", True),
    ),
    primary_key=("cid",),
    foreign_keys=(ForeignKeyInfo(("merchant_id",), "consumer_div.merchants", ("mid",)),),
)  # fmt: skip
MERCHANTS = TableInfo(
    "consumer_div", "merchants",
    columns=(ColumnInfo("mid", "bigint", False), ColumnInfo("name", "text", False)),
    primary_key=("mid",),
)  # fmt: skip
CATALOG = Catalog("ewallet", (COUPONS, MERCHANTS))
LISTED = (
    "SELECT t0.code, t0.discount_value, t0.merchant_id, t0.start_year "
    "FROM consumer_div.coupons AS t0"
)


async def _nothing(question: str) -> str | None:
    return None


def _same(left: str, right: str) -> None:
    assert sqlglot.parse_one(left, dialect="postgres") == sqlglot.parse_one(
        right, dialect="postgres"
    ), left


async def _filtered(sql: str, condition: str, *, exclude: bool = False) -> str:
    prior = Prior(sql, Relation.FILTER, condition=condition, exclude=exclude)
    return (await built(sql, prior, CATALOG, _nothing))[0]


@pytest.mark.parametrize(
    ("condition", "compared"),
    [
        ("worth more than 20", "t0.discount_value > 20"),
        ("the ones worth over 20", "t0.discount_value > 20"),
        ("priced at least 20", "t0.discount_value >= 20"),
        ("costing under 1.5k", "t0.discount_value < 1500"),
        ("cheaper than 20", "t0.discount_value < 20"),
        ("more expensive than 20", "t0.discount_value > 20"),
    ],
)
async def test_a_worth_compares_the_one_value_the_rows_show(condition, compared):
    # the key, the reference to merchants and the year shown beside it are no value
    _same(await _filtered(LISTED, condition), f"{LISTED} WHERE ({compared})")


async def test_leaving_out_the_ones_worth_more_keeps_the_rest():
    _same(
        await _filtered(LISTED, "worth more than 20", exclude=True),
        f"{LISTED} WHERE NOT (t0.discount_value > 20)",
    )


async def test_a_breakdown_is_kept_to_the_groups_whose_one_measure_passes():
    per_merchant = (
        "SELECT t1.name, SUM(t0.discount_value) AS total FROM consumer_div.coupons AS t0 "
        "JOIN consumer_div.merchants AS t1 ON t1.mid = t0.merchant_id GROUP BY t1.name"
    )
    _same(
        await _filtered(per_merchant, "worth more than 100"),
        f"{per_merchant} HAVING (SUM(t0.discount_value) > 100)",
    )


@pytest.mark.parametrize(
    "sql",
    [
        # two values shown: which one is worth the number is not said
        "SELECT t0.code, t0.discount_value, t0.max_discount_amount FROM consumer_div.coupons AS t0",
        # no value shown: only names, a count column, a year
        "SELECT t0.code, t0.num_redemptions, t0.start_year FROM consumer_div.coupons AS t0",
    ],
)
async def test_rows_that_show_no_one_value_are_refused_naming_the_words(sql):
    with pytest.raises(FollowUpError, match="worth more than 20"):
        await _filtered(sql, "worth more than 20")


async def test_words_that_are_no_comparison_of_worth_are_not_read_so():
    with pytest.raises(FollowUpError, match="expensive"):
        await _filtered(LISTED, "the expensive ones")


async def test_a_count_per_group_is_no_value_to_be_worth_a_number():
    per_merchant = (
        "SELECT t1.name, COUNT(*) AS n FROM consumer_div.coupons AS t0 "
        "JOIN consumer_div.merchants AS t1 ON t1.mid = t0.merchant_id GROUP BY t1.name"
    )
    with pytest.raises(FollowUpError, match="worth more than 3"):
        await _filtered(per_merchant, "worth more than 3")
