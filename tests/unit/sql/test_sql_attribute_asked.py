"""An attribute asked by a question word (issue 45, s58), on schemas of no dev set's:
"how old" asks for the one number column whose name says age, "where ... from" for the
one text column whose name says a place of origin, of the tables the subject names; none
or two such columns (a tie) and the question is read as asked, never guessed."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary, attribute_asked
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)


ACADEMY = Catalog(
    "academy",
    (
        TableInfo(
            "public",
            "instructor",
            columns=(
                key("instructor_id"),
                col("name", "text", ("Mara", "Tove")),
                col("age"),
                col("home_town", "text", ("Oslo", "Porto")),
            ),
            primary_key=("instructor_id",),
        ),
        TableInfo(
            "public",
            "subject",
            columns=(key("subject_id"), col("subject", "text", ("Chemistry", "Latin"))),
            primary_key=("subject_id",),
        ),
        TableInfo(
            "public",
            "lesson_plan",
            columns=(key("instructor_id"), key("subject_id"), col("level")),
            primary_key=("instructor_id", "subject_id"),
            foreign_keys=(
                ForeignKeyInfo(("instructor_id",), "public.instructor", ("instructor_id",)),
                ForeignKeyInfo(("subject_id",), "public.subject", ("subject_id",)),
            ),
        ),
        TableInfo(
            "public",
            "pupil",
            columns=(
                key("pupil_id"),
                col("name", "text", ("Ada", "Bo")),
                col("birth_city", "text", ("Lyon", "Gent")),
                col("birth_country", "text", ("France", "Belgium")),
                col("age_group", "text", ("junior", "senior")),
            ),
            primary_key=("pupil_id",),
        ),
    ),
)
WORDS = Vocabulary(ACADEMY, JoinGraph(ACADEMY))


def _shown(tree: exp.Select) -> list[str]:
    return [e.alias_or_name for e in tree.expressions]


def test_how_old_asks_for_the_age_column_of_the_table_the_subject_names() -> None:
    assert attribute_asked(WORDS, "How old is the instructor who teaches Latin?") == (
        "What is the age of the instructor who teaches Latin?"
    )
    tree = linked_statement("How old is the instructor who instructs Chemistry?", ACADEMY, TODAY)
    assert "age" in _shown(tree)
    assert "'Chemistry'" in tree.args["where"].sql(dialect="postgres")


def test_where_from_asks_for_the_one_column_of_origin() -> None:
    assert attribute_asked(WORDS, "Where is each instructor from?") == (
        "What is the home town of each instructor?"
    )
    tree = linked_statement("Where is each instructor from?", ACADEMY, TODAY)
    assert "home_town" in _shown(tree)


def test_no_column_or_a_tie_leaves_the_question_as_asked() -> None:
    # a pupil's city and country tie for "where from"; a text "age_group" is no age
    assert attribute_asked(WORDS, "Where is each pupil from?") is None
    assert attribute_asked(WORDS, "How old is each pupil?") is None
    # a subject has neither; and no table named at all
    assert attribute_asked(WORDS, "How old is the subject?") is None
    assert attribute_asked(WORDS, "How old is Mara?") is None


@pytest.mark.parametrize(
    "question",
    [
        "How long is each lesson plan?",  # an adjective whose noun is not read here
        "Where do instructors teach?",  # "where" without "from": a place, not an origin
        "How many instructors are from Oslo?",  # "from" says a condition, not a question word
        "What is the age of each instructor?",  # the noun said already
    ],
)
def test_other_forms_are_not_read_as_a_question_word_attribute(question: str) -> None:
    assert attribute_asked(WORDS, question) is None


MARINA = Catalog(
    "marina",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                key("boat_id"),
                col("name", "text", ("Aurora", "Selkie")),
                col("date_on_register", "date"),
                col("date_sold", "timestamp without time zone"),
                col("berths"),
            ),
            primary_key=("boat_id",),
        ),
    ),
)
BOATS = Vocabulary(MARINA, JoinGraph(MARINA))


def test_when_asks_for_the_date_column_the_predicate_names() -> None:
    assert attribute_asked(BOATS, "When was each boat put on the register?") == (
        "What was the date on register of each boat?"
    )
    assert attribute_asked(BOATS, "When were the boats sold?") == (
        "What were the date sold of the boats?"
    )
    tree = linked_statement("When was each boat put on the register?", MARINA, TODAY)
    assert "date_on_register" in _shown(tree)


@pytest.mark.parametrize(
    "question",
    [
        "When was the boat sold in 2019?",  # the predicate says a condition besides the date
        "When was the boat with 4 berths sold?",  # so does the subject's phrase
        "When was the boat repaired?",  # two date columns, neither named by the predicate
        "When is the marina open?",  # no table named
    ],
)
def test_when_reads_as_asked_a_predicate_that_says_more(question: str) -> None:
    assert attribute_asked(BOATS, question) is None
