"""Ranking rows by a quantity their related rows hold: a ticker by the shares of its
many transactions. Listed row by row, a ticker comes once per transaction and "the 4
tickers" would be four transactions; so the rows are grouped per ticker, an amount ("the
most shares") summed and a value ("the highest closing price") taken at its greatest.
A superlative whose quantity only a verb names ("spent the most on cars") is refused,
not read as a count of what follows it. And the columns that name a row are its own
codes, not the codes of what it has (a customer's zip code)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 24)


def _fk(column: str, table: str, key: str) -> ForeignKeyInfo:
    return ForeignKeyInfo((column,), f"public.{table}", (key,))


# Broker-shaped: packed names, no declared keys (joins inferred from the names).
MARKET = Catalog(
    "market",
    (
        TableInfo(
            "public",
            "sbticker",
            row_estimate=20,
            columns=(
                col("sbtickerid", "character varying(20)"),
                col("sbtickersymbol", "character varying(10)"),
                col("sbtickername", "character varying(100)"),
                col("sbtickertype", "character varying(20)", ("etf", "stock")),
            ),
            primary_key=("sbtickerid",),
        ),
        TableInfo(
            "public",
            "sbcustomer",
            row_estimate=20,
            columns=(
                col("sbcustid", "character varying(20)"),
                col("sbcustname", "character varying(100)"),
            ),
            primary_key=("sbcustid",),
        ),
        TableInfo(
            "public",
            "sbtransaction",
            row_estimate=200,
            columns=(
                col("sbtxid", "character varying(50)"),
                col("sbtxcustid", "character varying(20)"),
                col("sbtxtickerid", "character varying(20)"),
                col("sbtxdatetime", "timestamp without time zone"),
                col("sbtxshares", "numeric(10,2)"),
            ),
            primary_key=("sbtxid",),
        ),
        TableInfo(
            "public",
            "sbdailyprice",
            row_estimate=300,
            columns=(
                col("sbdptickerid", "character varying(20)"),
                col("sbdpdate", "date"),
                col("sbdpclose", "numeric(10,2)"),
                col("sbdpvolume", "bigint"),
            ),
        ),
    ),
)

# Dealership-shaped: declared keys, a sale per car sold to a customer.
DEALER = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            row_estimate=20,
            columns=(col("id"), col("make", "text"), col("model", "text"), col("cost", "numeric")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "customers",
            row_estimate=20,
            columns=(
                col("id"),
                col("first_name", "text"),
                col("last_name", "text"),
                col("city", "text"),
                col("zip_code", "character varying(10)"),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "sales",
            row_estimate=100,
            columns=(
                col("id"),
                col("car_id"),
                col("customer_id"),
                col("sale_price", "numeric(10,2)"),
                col("sale_date", "date"),
            ),
            primary_key=("id",),
            foreign_keys=(_fk("car_id", "cars", "id"), _fk("customer_id", "customers", "id")),
        ),
        TableInfo(
            "public",
            "airports",
            row_estimate=10,
            columns=(col("airport_code", "character varying(3)"), col("city", "text")),
            primary_key=("airport_code",),
        ),
    ),
)


def _aggregates(tree: exp.Select) -> dict[str, set[str]]:
    """Aggregate function name -> the columns it reads."""
    found: dict[str, set[str]] = {}
    for func in tree.find_all(exp.AggFunc):
        found.setdefault(func.key.upper(), set()).update(c.name for c in func.find_all(exp.Column))
    return found


def _grouped_by(tree: exp.Select) -> set[str]:
    group = tree.args.get("group")
    return {c.name for c in group.find_all(exp.Column)} if group else set()


def _limit(tree: exp.Select) -> int:
    limit = tree.args.get("limit")
    assert limit is not None
    return int(limit.expression.name)


@pytest.mark.parametrize(("question", "limit"), [
    ("Which 4 tickers had the most shares traded?", 4),
    ("Which ticker had the most shares traded?", 1),
])  # fmt: skip
def test_the_most_of_a_quantity_on_related_rows_is_their_sum_per_ranked_row(
    question: str, limit: int
) -> None:
    tree = linked_statement(question, MARKET, TODAY)
    assert _aggregates(tree) == {"SUM": {"sbtxshares"}}
    assert "sbtickerid" in _grouped_by(tree)  # one row per ticker, however many trades
    assert tree.args["order"].expressions[0].args.get("desc")
    assert _limit(tree) == limit


def test_the_fewest_is_the_smallest_sum_first() -> None:
    tree = linked_statement("Which 3 customers had the fewest shares traded?", MARKET, TODAY)
    assert _aggregates(tree) == {"SUM": {"sbtxshares"}}
    assert "sbcustid" in _grouped_by(tree)
    assert not tree.args["order"].expressions[0].args.get("desc")


@pytest.mark.parametrize(("question", "catalog", "column", "key"), [
    ("Which 3 tickers had the highest close?", MARKET, "sbdpclose", "sbtickerid"),
    ("Which ticker had the highest daily close?", MARKET, "sbdpclose", "sbtickerid"),
    ("Which 3 customers had the highest sale price?", DEALER, "sale_price", "id"),
])  # fmt: skip
def test_the_highest_value_on_related_rows_is_each_rows_greatest_not_their_sum(
    question: str, catalog: Catalog, column: str, key: str
) -> None:
    tree = linked_statement(question, catalog, TODAY)
    assert _aggregates(tree) == {"MAX": {column}}
    assert key in _grouped_by(tree)


def test_a_superlative_whose_quantity_only_the_verb_names_is_refused_not_counted() -> None:
    # "spent the most on cars": the money is not named, and the number of cars is not it
    with pytest.raises(LinkError):
        linked_statement("Which 5 customers spent the most on cars?", DEALER, TODAY)


# Spider-shaped: the amount a visit spent, named by its column.
MUSEUM = Catalog(
    "museum",
    (
        TableInfo(
            "public",
            "visitor",
            row_estimate=10,
            columns=(col("id"), col("name", "text"), col("age")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "visit",
            row_estimate=30,
            columns=(col("visitor_id"), col("num_of_ticket"), col("total_spent", "real")),
            foreign_keys=(_fk("visitor_id", "visitor", "id"),),
        ),
    ),
)


def test_the_most_in_total_is_the_quantity_the_words_name_not_a_refusal() -> None:
    # a preposition after "most" that names no table: the words still name the quantity
    tree = linked_statement("Which 2 visitors spent the most in total?", MUSEUM, TODAY)
    assert _aggregates(tree) == {"SUM": {"total_spent"}}
    assert "id" in _grouped_by(tree)


def test_a_code_of_something_the_row_has_does_not_name_the_row() -> None:
    customers = linked_statement("List the customers.", DEALER, TODAY)
    shown = {e.alias_or_name for e in customers.expressions}
    assert "zip_code" not in shown
    assert {"first_name", "last_name"} <= shown
    # the row's own code names it
    airports = linked_statement("List the airports.", DEALER, TODAY)
    assert "airport_code" in {e.alias_or_name for e in airports.expressions}


GALLERIES = Catalog(
    "galleries",
    (
        TableInfo(
            "public",
            "museum",
            row_estimate=8,
            columns=(
                col("museum_id"),
                col("name", "text", ("Plaza Museum", "RiverPark Museum")),
                col("num_of_staff"),
                col("open_year"),
                col("city_id"),
            ),
            primary_key=("museum_id",),
            # a thing of its own that refers to another: its count stays its own
            foreign_keys=(_fk("city_id", "city", "city_id"),),
        ),
        TableInfo(
            "public",
            "city",
            row_estimate=5,
            columns=(col("city_id"), col("city_name", "text", ("Louisville",))),
            primary_key=("city_id",),
        ),
        TableInfo(
            "public",
            "visit",
            row_estimate=30,
            columns=(col("museum_id"), col("num_of_ticket"), col("total_spent", "real")),
            foreign_keys=(_fk("museum_id", "museum", "museum_id"),),
        ),
    ),
)


@pytest.mark.parametrize(
    "question",
    [
        "How many tickets were bought?",
        "How many tickets were bought at museums that opened after 2009?",
    ],
)
def test_how_many_of_a_count_the_event_rows_store_is_their_sum(question: str) -> None:
    # tickets stored as a count per visit, asked "how many" with no grouping: one total
    # (issue 45, s61), not each visit's count listed as if it were the answer
    tree = linked_statement(question, GALLERIES, TODAY)
    assert _aggregates(tree) == {"SUM": {"num_of_ticket"}}
    assert not _grouped_by(tree)


def test_how_many_of_a_things_own_count_stays_that_things_number() -> None:
    # the museum's own count of staff: a named thing holds it per row, though the museum
    # refers to its city as the visits refer to the museum
    tree = linked_statement("How many staff does Plaza Museum have?", GALLERIES, TODAY)
    assert not _aggregates(tree)
    assert "num_of_staff" in {c.name for c in tree.expressions[0].find_all(exp.Column)}
