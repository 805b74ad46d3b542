"""Three kinds of first question answered confidently and wrongly (ISSUE-45, s63), each
shown through the real linker and verifier on invented schemas shaped as defog's
car_dealership and nycflights13:

- a second measure said as a noun ("How many sales and the total sale price …")
  answered with the count alone: refused, naming the total left out;
- a passive's "by" before a bare singular noun ("flights operated by airline") answered
  with one count: grouped by that table's rows, as "by airline" is;
- "destinations per carrier" answered with ``COUNT(dest)`` (every flight): the count of a
  text column's noun per group counts its different values;
- "customers … in 2023" answered by the cars' model year (``cars.year = 2023``) where the
  sales read carry their date: refused, naming the year and the column compared.

The negative tests keep what was right answered."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


def _person(name: str) -> TableInfo:
    return TableInfo(
        "public",
        name,
        columns=(
            key("id"),
            col("first_name", "text", ("Jane", "Paul")),
            col("last_name", "text", ("Smith", "Jones")),
        ),
        primary_key=("id",),
    )


DEALER = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            columns=(
                key("id"),
                col("make", "text", ("Toyota", "Ford")),
                col("color", "text", ("Red", "Blue")),
                col("year"),
                col("cost", "numeric"),
            ),
            primary_key=("id",),
        ),
        _person("salespersons"),
        _person("customers"),
        TableInfo(
            "public",
            "sales",
            columns=(
                key("id"),
                key("car_id"),
                key("salesperson_id"),
                key("customer_id"),
                col("sale_price", "numeric"),
                col("sale_date", "date"),
            ),
            primary_key=("id",),
            foreign_keys=(
                ForeignKeyInfo(("car_id",), "public.cars", ("id",)),
                ForeignKeyInfo(("salesperson_id",), "public.salespersons", ("id",)),
                ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),
            ),
        ),
    ),
)
DEALER_WORDS = Vocabulary(DEALER, JoinGraph(DEALER))
FLIGHT_WORDS = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))

# what main answered the two-measure question with: the count alone
COUNT_ALONE = (
    "SELECT t0.salesperson_id AS salesperson_id, COUNT(*) AS count FROM public.sales AS t0 "
    "WHERE (t0.sale_date >= '2023-01-01' AND t0.sale_date < '2024-01-01') "
    "GROUP BY t0.salesperson_id"
)


def _tree(question: str, catalog: Catalog) -> exp.Select:
    tree = sqlglot.parse_one(linked_sql(question, catalog, TODAY), dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def test_a_total_said_beside_a_count_is_held_to_a_sum() -> None:
    ctx = read_question(
        "How many sales and the total sale price did each salesperson make in 2023?",
        DEALER_WORDS,
        TODAY,
    )
    with pytest.raises(LinkError, match="total sale price"):
        verify_statement(ctx, COUNT_ALONE)


@pytest.mark.parametrize(
    "question",
    [
        "How many sales did each salesperson make in 2023?",
        "What is the total number of sales per salesperson in 2023?",
        "How many sales did each salesperson make in total in 2023?",
    ],
)
def test_a_count_alone_or_a_total_count_stands(question: str) -> None:
    verify_statement(read_question(question, DEALER_WORDS, TODAY), COUNT_ALONE)


def test_both_measures_answered_stand() -> None:
    tree = _tree("How many sales and the total sale price did each salesperson make?", DEALER)
    assert tree.find(exp.Sum) and tree.find(exp.Count)


def _grouped_by(tree: exp.Select) -> set[str]:
    group = tree.args.get("group")
    return {c.name for c in group.find_all(exp.Column)} if group else set()


@pytest.mark.parametrize(
    "question",
    [
        "How many flights were operated by airline?",
        "What is the total distance flown by airline?",
    ],
)
def test_a_passive_by_a_bare_singular_noun_groups(question: str) -> None:
    assert "carrier" in _grouped_by(_tree(question, FLIGHTS))


def test_the_verifier_holds_a_bare_agent_to_a_grouping() -> None:
    ctx = read_question("How many flights were operated by airline?", FLIGHT_WORDS, TODAY)
    with pytest.raises(LinkError, match="by airline"):
        verify_statement(
            ctx,
            "SELECT COUNT(*) AS count FROM public.flights AS t0 "
            "JOIN public.airlines AS t1 ON t1.carrier = t0.carrier",
        )


@pytest.mark.parametrize(
    "question",
    [
        "How many flights were operated by the airline?",
        "How many flights were operated by airlines?",
    ],
)
def test_a_passive_by_a_determiner_or_a_plural_stays_an_agent(question: str) -> None:
    assert not _grouped_by(_tree(question, FLIGHTS))


@pytest.mark.parametrize(
    ("question", "catalog", "column"),
    [
        ("destinations per carrier", FLIGHTS, "dest"),
        ("How many destinations does each carrier fly to?", FLIGHTS, "dest"),
        ("number of colors per make", DEALER, "color"),
    ],
)
def test_a_column_noun_counted_per_group_counts_its_values(
    question: str, catalog: Catalog, column: str
) -> None:
    count = _tree(question, catalog).find(exp.Count)
    assert count is not None
    assert isinstance(count.this, exp.Distinct)
    assert count.this.expressions[0].name == column


def test_a_table_noun_counted_per_group_counts_its_rows() -> None:
    count = _tree("number of flights per carrier", FLIGHTS).find(exp.Count)
    assert count is not None and isinstance(count.this, exp.Star)


# what main answered "How many customers bought cars in 2023?" with: the cars' model year
MODEL_YEAR = (
    "SELECT COUNT(DISTINCT t0.id) AS count FROM public.customers AS t0 "
    "JOIN public.sales AS t1 ON t1.customer_id = t0.id "
    "JOIN public.cars AS t2 ON t2.id = t1.car_id WHERE (t2.year = 2023)"
)


def test_a_year_window_on_a_joined_year_number_is_refused() -> None:
    ctx = read_question("How many customers bought cars in 2023?", DEALER_WORDS, TODAY)
    with pytest.raises(LinkError, match=r"'in 2023'.*cars\.year"):
        verify_statement(ctx, MODEL_YEAR)


def test_a_year_said_as_a_kind_or_on_the_counted_rows_stands() -> None:
    # "cars from 2023" names the cars' year, not a window
    ctx = read_question("How many customers bought cars from 2023?", DEALER_WORDS, TODAY)
    verify_statement(ctx, MODEL_YEAR)
    # the counted rows' own year column is their time
    ctx = read_question("How many flights were there in 2013?", FLIGHT_WORDS, TODAY)
    verify_statement(
        ctx, "SELECT COUNT(*) AS count FROM public.flights AS t0 WHERE (t0.year = 2013)"
    )


@pytest.mark.parametrize(
    "question",
    [
        # a defined measure spelled out (defog's TAC, TSC): counts of rows
        "How many sales are there, as total sales?",
        "How many sales are there, as the total sales count?",
    ],
)
def test_a_total_of_rows_or_a_total_count_is_a_count(question: str) -> None:
    ctx = read_question(question, DEALER_WORDS, TODAY)
    verify_statement(ctx, "SELECT COUNT(*) AS count FROM public.sales AS t0")
