"""An attribute asked by a question word (issue 45, s58), on schemas of no dev set's:
"how old" asks for the one number column whose name says age, "where ... from" for the
one text column whose name says a place of origin, of the tables the subject names; none
or two such columns (a tie) and the question is read as asked, never guessed."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary, attribute_asked
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)


def _key(name: str) -> ColumnInfo:
    return ColumnInfo(name, "integer", False)


ACADEMY = Catalog(
    "academy",
    (
        TableInfo(
            "public",
            "instructor",
            columns=(
                _key("instructor_id"),
                col("name", "text", ("Mara", "Tove")),
                col("age"),
                col("home_town", "text", ("Oslo", "Porto")),
            ),
            primary_key=("instructor_id",),
        ),
        TableInfo(
            "public",
            "subject",
            columns=(_key("subject_id"), col("subject", "text", ("Chemistry", "Latin"))),
            primary_key=("subject_id",),
        ),
        TableInfo(
            "public",
            "lesson_plan",
            columns=(_key("instructor_id"), _key("subject_id"), col("level")),
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
                _key("pupil_id"),
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
