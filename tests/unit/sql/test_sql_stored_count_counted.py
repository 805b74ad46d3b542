"""A count of the values of a column that stores a count: "How many rooms does each
house with a garden have?" answered with ``COUNT(room_count)`` per house counts the
houses' rows that have a room count (one each), not their rooms. Found on the Spider v4
study script (real_estate_properties, s59): refused, naming the column, and the linker
reads the stored number instead. On a schema of its own."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 30)

HOUSING = Catalog(
    "housing",
    (
        TableInfo(
            "public",
            "houses",
            columns=(
                ColumnInfo("house_id", "integer", False),
                ColumnInfo("house_name", "text", False, known_values=("Elm Lodge", "Ivy Cottage")),
                ColumnInfo("room_count", "integer", True),
            ),
            primary_key=("house_id",),
        ),
        TableInfo(
            "public",
            "features",
            columns=(
                ColumnInfo("feature_id", "integer", False),
                ColumnInfo("feature_name", "text", False, known_values=("Garden", "Garage")),
            ),
            primary_key=("feature_id",),
        ),
        TableInfo(
            "public",
            "house_features",
            columns=(
                ColumnInfo("house_id", "integer", False),
                ColumnInfo("feature_id", "integer", False),
            ),
            primary_key=("house_id", "feature_id"),
            foreign_keys=(
                ForeignKeyInfo(("house_id",), "public.houses", ("house_id",)),
                ForeignKeyInfo(("feature_id",), "public.features", ("feature_id",)),
            ),
        ),
    ),
)
VOCABULARY = Vocabulary(HOUSING, JoinGraph(HOUSING))
THROUGH_FEATURES = (
    " FROM public.houses AS t0 JOIN public.house_features AS t1 ON t1.house_id = t0.house_id"
    " JOIN public.features AS t2 ON t2.feature_id = t1.feature_id"
    " WHERE (t2.feature_name = 'Garden')"
)
QUESTION = "How many rooms does each house with a Garden have?"


def _verify(sql: str, question: str = QUESTION) -> None:
    verify_statement(read_question(question, VOCABULARY, TODAY), sql)


@pytest.mark.parametrize("counted", ["COUNT(t0.room_count)", "COUNT(DISTINCT t0.room_count)"])
def test_a_count_of_a_stored_count_is_refused_naming_the_column(counted: str) -> None:
    sql = (
        f"SELECT t0.house_id, t0.house_name, {counted} AS n{THROUGH_FEATURES}"
        " GROUP BY t0.house_id, t0.house_name"
    )
    with pytest.raises(LinkError, match=r"houses\.room_count, which holds a count"):
        _verify(sql)


def test_the_stored_number_itself_passes() -> None:
    _verify(f"SELECT DISTINCT t0.house_id, t0.house_name, t0.room_count{THROUGH_FEATURES}")


def test_a_count_of_rows_passes() -> None:
    """Counting the houses (rows) is no count of the stored number's values."""
    _verify("SELECT COUNT(*) AS n FROM public.houses AS t0", "How many houses are there?")


def test_the_linker_never_answers_with_the_count_of_a_stored_count() -> None:
    """Before the check the linker's one reading of the question was ``COUNT(room_count)``
    per house; now it reads the stored number or refuses, naming the column."""
    try:
        sql = QuestionLinker(QUESTION, VOCABULARY, TODAY, check=verify_statement).link().sql
    except LinkError as refused:
        assert "room_count" in str(refused)
    else:
        assert "COUNT(" not in sql.upper(), sql
