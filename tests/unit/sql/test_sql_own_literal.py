"""A literal compared by equality with the one column a statement shows returns only that
literal: the value was meant of another column. On a schema of its own (no dev set's),
where 'guinness' is stored both as a beer and as a brewer and 'heineken' only as a
brewer: the reader places the value on the other column that holds it, and the verifier
refuses any statement that still shows only the column its literal is compared with (or
one its joins set equal to it); a column of the table's key is exempt."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 24)
BREWERS = ("carlsberg", "guinness", "heineken")

BREWING = Catalog(
    "brewing",
    (
        TableInfo(
            "public",
            "brewers",
            columns=(
                ColumnInfo("id", "integer", False),
                ColumnInfo("brewer", "text", False, known_values=BREWERS),
                ColumnInfo("city", "text", False, known_values=("Amsterdam", "Dublin")),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "beers",
            columns=(
                ColumnInfo("beer_id", "integer", False),
                ColumnInfo("brewer", "integer", False),
                ColumnInfo("beer", "text", False, known_values=("guinness", "pilsner", "stout")),
            ),
            primary_key=("beer_id",),
            foreign_keys=(ForeignKeyInfo(("brewer",), "public.brewers", ("id",)),),
        ),
    ),
)
VOCABULARY = Vocabulary(BREWING, JoinGraph(BREWING))


def _sql(question: str) -> str:
    linked = QuestionLinker(question, VOCABULARY, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split())


def test_a_value_the_shown_column_also_holds_is_placed_on_the_other_column() -> None:
    # 'guinness' is a beer and a brewer: equal to the beer shown it would only return
    # 'guinness'; the brewer that holds it is the one meant, as for 'heineken'
    for brewer in ("guinness", "heineken"):
        sql = _sql(f"Which beers does {brewer} brew?")
        assert f"sj1.brewer = '{brewer}'" in sql
        assert "t0.beer =" not in sql


def test_a_statement_showing_only_the_column_its_literal_is_equal_to_is_refused() -> None:
    ctx = read_question("Which beers does guinness brew?", VOCABULARY, TODAY)
    with pytest.raises(LinkError, match="'guinness' is compared with beer, the one column"):
        verify_statement(
            ctx,
            "SELECT DISTINCT t0.beer AS beer FROM public.beers AS t0 JOIN public.brewers AS t1"
            " ON t1.id = t0.brewer WHERE (t0.beer = 'guinness')",
        )
    # shown beside another column, the literal is a condition like any other
    verify_statement(
        read_question("Which beers and brewer ids are guinness?", VOCABULARY, TODAY),
        "SELECT t0.beer AS beer, t0.brewer AS brewer FROM public.beers AS t0"
        " WHERE t0.beer = 'guinness'",
    )


def test_a_key_shown_equal_to_a_literal_says_which_rows_there_are() -> None:
    # the rows' own key, kept to one value: whether such a row exists, not a value repeated
    ctx = read_question("Does a brewer with id 3 exist?", VOCABULARY, TODAY)
    verify_statement(ctx, "SELECT t0.id AS id FROM public.brewers AS t0 WHERE t0.id = 3")


def test_a_literal_equal_to_a_column_joined_to_the_one_shown_is_refused() -> None:
    # beers.brewer is set equal to brewers.id: comparing either with 3 returns 3
    ctx = read_question("Give the brewer of the beers whose brewer is 3.", VOCABULARY, TODAY)
    with pytest.raises(LinkError, match="3 is compared with brewer, the one column shown"):
        verify_statement(
            ctx,
            "SELECT t0.brewer AS brewer FROM public.beers AS t0 JOIN public.brewers AS t1"
            " ON t1.id = t0.brewer WHERE t1.id = 3",
        )
