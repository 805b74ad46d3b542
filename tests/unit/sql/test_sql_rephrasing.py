"""A phrase fronted before the question it qualifies ("In 1980, how many cars were
made?"): refused as asked, the question is read once more with the phrase at the end of
its sentence; a question read as asked keeps that reading."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.linker import _linker as linker_module
from services.sql.linker._rephrasing import fronted_last
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "text", span: tuple[int, int] | None = None) -> ColumnInfo:
    return ColumnInfo(name, data_type, name not in ("car_id", "plant_id"), span=span)


CARS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "plants",
            columns=(_col("plant_id", "integer"), _col("name"), _col("city")),
            primary_key=("plant_id",),
        ),
        TableInfo(
            "public",
            "cars",
            columns=(
                _col("car_id", "integer"),
                _col("plant_id", "integer"),
                _col("weight", "integer"),
                _col("year", "integer", (1970, 1982)),
            ),
            primary_key=("car_id",),
            foreign_keys=(ForeignKeyInfo(("plant_id",), "public.plants", ("plant_id",)),),
        ),
    ),
)


def _sql(question: str) -> str:
    vocabulary = Vocabulary(CARS, JoinGraph(CARS))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split())


@pytest.mark.parametrize(
    ("asked", "read"),
    [
        ("In 1980, how many cars were made?", "How many cars were made in 1980?"),
        (
            "For each plant, how many cars are there? Give the names.",
            "How many cars are there for each plant? Give the names.",
        ),
        (
            "During 1975, what was the weight of 3.5 cars",
            "What was the weight of 3.5 cars during 1975",
        ),
    ],
)
def test_a_fronted_phrase_is_moved_to_the_end_of_its_sentence(asked: str, read: str) -> None:
    assert fronted_last(asked) == read


@pytest.mark.parametrize(
    "question",
    [
        "How many cars were made in 1980?",  # nothing fronted
        "In which year were most cars made?",  # a question word after the preposition
        "For Ford, Toyota and Fiat how many cars?",  # no comma closes a phrase
        "After all, Ford, Fiat: which?",  # no question after the phrase
    ],
)
def test_a_question_without_a_fronted_phrase_is_left_as_it_is(question: str) -> None:
    assert fronted_last(question) == question


@pytest.mark.parametrize(
    ("asked", "condition"),
    [("In 1980, how many cars were made?", "t0.year = 1980"),
     ("After 1975, how many cars were made?", "t0.year > 1975")],
)  # fmt: skip
def test_a_fronted_year_bounds_the_year_column(asked: str, condition: str) -> None:
    sql = _sql(asked)
    assert condition in sql and sql == _sql(fronted_last(asked))


def test_a_question_read_as_asked_keeps_that_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "For each plant, …" is read as asked: moving the phrase is only for a question
    refused as asked, so a question the readers place is never said again (an answered
    question's reading cannot change)."""

    def never(question: str) -> str:
        raise AssertionError(f"rephrased a question read as asked: {question!r}")

    monkeypatch.setattr(linker_module, "rephrased", never)
    sql = _sql("For each plant, how many cars are made there?")
    assert "GROUP BY" in sql and "COUNT(*)" in sql


def test_a_fronted_phrase_that_is_still_unread_keeps_the_refusal_as_asked() -> None:
    """Refused moved too, the question is refused for the phrase as it was asked, not for
    the words of a sentence the user never wrote."""
    with pytest.raises(LinkError) as refused:
        _sql("In the rain, how many cars were made?")
    assert refused.value.phrase == "In the rain"
