"""A question in two sentences ("…? List the continent id, continent name and the number
of countries."): refused as asked, it is read as its first sentence showing what the
second names, and only where the first's statement can show every named item without
changing its rows."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.linker._shown import shown_as_asked, two_sentences
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


# "id" names a column of two tables, so the clause reader declines "the continent id";
# said in a second sentence, the list reader cannot place it either.
MAKERS = Catalog(
    "makers",
    (
        TableInfo(
            "public",
            "continents",
            columns=(_col("contid", "integer"), _col("continent")),
            primary_key=("contid",),
        ),
        TableInfo(
            "public",
            "countries",
            columns=(
                _col("countryid", "integer"),
                _col("countryname"),
                _col("continent", "integer"),
            ),
            primary_key=("countryid",),
            foreign_keys=(ForeignKeyInfo(("continent",), "public.continents", ("contid",)),),
        ),
        TableInfo(
            "public",
            "car_makers",
            columns=(
                _col("id", "integer"),
                _col("maker"),
                _col("fullname"),
                _col("country", "integer"),
            ),
            primary_key=("id",),
            foreign_keys=(ForeignKeyInfo(("country",), "public.countries", ("countryid",)),),
        ),
        TableInfo(
            "public",
            "cars_data",
            columns=(_col("id", "integer"), _col("mpg", "integer")),
            primary_key=("id",),
        ),
    ),
)


def _sql(question: str) -> str:
    vocabulary = Vocabulary(MAKERS, JoinGraph(MAKERS))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split())


def test_the_second_sentence_names_what_to_show_for_the_first() -> None:
    sql = _sql(
        "How many countries does each continent have? "
        "List the continent id, continent name and the number of countries."
    )
    select = sql.split(" FROM ")[0]
    # the id the second sentence names is shown, from the continent the first groups by
    assert "contid" in select and "continent" in select and "COUNT(*)" in select
    assert "GROUP BY" in sql and "car_makers" not in sql


def test_a_column_the_first_does_not_group_by_keeps_the_question_refused() -> None:
    # a country is not one of the continents the first sentence counts for
    with pytest.raises(LinkError):
        _sql("How many countries does each continent have? List the country name.")


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Which country has the most makers? List the country name.",
            ("Which country has the most makers?", "List the country name."),
        ),
        (
            "How many makers are there? Only list the count.",
            ("How many makers are there?", "Only list the count."),
        ),
        (
            "Find the makers. Give the name and the id.",
            ("Find the makers.", "Give the name and the id."),
        ),
    ],
)
def test_a_question_then_a_request_to_show_is_two_sentences(
    question: str, parts: tuple[str, str]
) -> None:
    assert two_sentences(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        "List the makers of Japan.",  # one sentence
        "How many makers are there? How many countries?",  # two questions
        "The makers of Japan. List the names.",  # the first sentence asks nothing
    ],
)
def test_other_questions_are_not_two_sentences(question: str) -> None:
    assert two_sentences(question) is None


def test_an_item_the_first_cannot_show_is_refused() -> None:
    rows = (
        "SELECT t1.continent AS continent, COUNT(*) AS count FROM public.countries AS t0 "
        "JOIN public.continents AS t1 ON t1.contid = t0.continent GROUP BY t1.continent, t1.contid"
    )
    # grouped by: shown; an aggregate the first computes: shown; anything else: refused
    assert "t1.contid AS contid" in (
        shown_as_asked(rows, "SELECT t0.contid AS contid FROM public.continents AS t0") or ""
    )
    assert shown_as_asked(rows, "SELECT COUNT(*) AS count FROM public.continents AS t0") == rows
    assert shown_as_asked(rows, "SELECT AVG(t0.contid) AS a FROM public.continents AS t0") is None
    assert shown_as_asked(rows, "SELECT t0.fullname AS f FROM public.car_makers AS t0") is None


def test_rows_neither_grouped_nor_aggregated_show_any_column_of_a_table_read_once() -> None:
    rows = (
        "SELECT t0.countryname AS countryname FROM public.countries AS t0 "
        "JOIN public.continents AS t1 ON t1.contid = t0.continent WHERE (t1.continent = 'asia')"
    )
    shown = "SELECT t0.countryid AS countryid FROM public.countries AS t0"
    assert "t0.countryid AS countryid" in (shown_as_asked(rows, shown) or "")
    # dropping duplicates, the rows are the values shown: another column changes them
    distinct = rows.replace("SELECT ", "SELECT DISTINCT ", 1)
    assert shown_as_asked(distinct, shown) is None
