"""The attribute of the rows said (issue 45, s60): in "the <attribute> of the <rows>"
and "the <rows> <attribute>" the column shown is one of the rows' own, or of a table each
of their rows refers to, never of a table that only joins to them; "names" of rows with
no column called that is what names them, and any other attribute they lack is refused;
the verifier refuses names shown of a table that only joins to the rows asked, whoever
proposed the statement. On a schema of its own (no dev set's)."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


def _ref(column: str, table: str) -> ForeignKeyInfo:
    return ForeignKeyInfo((column,), f"public.{table}", (column,))


# a workshop is named by the text column called what its table is called; its
# instructors (who have a ``name``) and rooms (which have none) only join to it
SCHOOL = Catalog(
    "school",
    (
        TableInfo(
            "public",
            "workshop",
            columns=(
                key("workshop_id"),
                col("opening_day", "text", ("5 May", "6 May")),
                col("workshop", "text", ("Pottery", "Weaving", "Glass Blowing")),
            ),
            primary_key=("workshop_id",),
        ),
        TableInfo(
            "public",
            "instructor",
            columns=(
                key("instructor_id"),
                col("name", "text", ("Ada Lund", "Bo Krantz")),
                col("hometown", "text", ("Malmo", "Lund")),
            ),
            primary_key=("instructor_id",),
        ),
        TableInfo(
            "public",
            "room",
            columns=(key("room_id"), col("capacity")),
            primary_key=("room_id",),
        ),
        TableInfo(
            "public",
            "workshop_arrange",
            columns=(key("workshop_id"), key("instructor_id"), key("room_id"), col("level")),
            primary_key=("workshop_id", "instructor_id", "room_id"),
            foreign_keys=(
                _ref("workshop_id", "workshop"),
                _ref("instructor_id", "instructor"),
                _ref("room_id", "room"),
            ),
        ),
    ),
)

# a player is a person: the person's name is the player's
CLUB = Catalog(
    "club",
    (
        TableInfo(
            "public",
            "person",
            columns=(key("person_id"), col("name", "text", ("Cy Berg", "Di Holm"))),
            primary_key=("person_id",),
        ),
        TableInfo(
            "public",
            "player",
            columns=(key("player_id"), key("person_id"), col("earnings", "numeric")),
            primary_key=("player_id",),
            foreign_keys=(_ref("person_id", "person"),),
        ),
    ),
)


def _sql(question: str, catalog: Catalog = SCHOOL) -> str:
    return linked_sql(question, catalog, TODAY)


@pytest.mark.parametrize(
    "question",
    [
        "List the names of the workshops.",
        "List the names of all workshops.",
        "What are the names of the workshops?",
        "List the workshop names.",
    ],
)
def test_the_names_of_rows_without_a_name_column_are_what_names_them(question: str) -> None:
    assert _sql(question) == "SELECT t0.workshop AS workshop FROM public.workshop AS t0"


def test_an_attribute_the_rows_lack_is_refused_not_taken_from_a_joined_table() -> None:
    with pytest.raises(LinkError):
        _sql("List the hometowns of the workshops.")


def test_rows_nothing_names_are_refused_not_named_by_a_joined_table() -> None:
    with pytest.raises(LinkError):
        _sql("List the names of the rooms.")


def test_the_rows_own_name_column_is_shown() -> None:
    assert _sql("List the names of the instructors.") == (
        "SELECT t0.name AS name FROM public.instructor AS t0"
    )


def test_a_name_said_with_its_own_table_is_that_tables_per_row() -> None:
    sql = _sql("What are the names of the instructors of each workshop?")
    assert "t0.name AS name" in sql and "FROM public.instructor AS t0" in sql
    assert "AS workshop" in sql


def test_the_name_of_a_row_each_row_refers_to_is_the_rows_own() -> None:
    sql = _sql("List the names of the players.", CLUB)
    assert "t0.name AS name" in sql and "public.person AS t0" in sql
    assert "public.player" in sql


def _verify(question: str, sql: str, catalog: Catalog = SCHOOL) -> None:
    verify_statement(read_question(question, Vocabulary(catalog, JoinGraph(catalog)), TODAY), sql)


_INSTRUCTORS_OF_WORKSHOPS = (
    "SELECT DISTINCT t0.instructor_id, t0.name FROM public.instructor AS t0 "
    "JOIN public.workshop_arrange AS t1 ON t1.instructor_id = t0.instructor_id "
    "JOIN public.workshop AS t2 ON t2.workshop_id = t1.workshop_id"
)


@pytest.mark.parametrize(
    "question", ["List the names of all workshops.", "What are the workshop names?"]
)
def test_the_verifier_refuses_names_of_a_table_that_only_joins_to_the_rows(question: str) -> None:
    with pytest.raises(LinkError, match="names of workshop"):
        _verify(question, _INSTRUCTORS_OF_WORKSHOPS)


@pytest.mark.parametrize(
    "question",
    [
        "What are the names of the instructors of each workshop?",
        "What is the name of each workshop's instructor?",
        "List the names of the instructors.",
    ],
)
def test_the_verifier_lets_names_of_the_rows_asked_or_their_possessor_pass(question: str) -> None:
    _verify(question, _INSTRUCTORS_OF_WORKSHOPS)


def test_the_verifier_lets_the_name_of_a_row_each_row_refers_to_pass() -> None:
    _verify(
        "List the names of the players.",
        "SELECT t0.name FROM public.person AS t0 JOIN public.player AS t1 "
        "ON t1.person_id = t0.person_id",
        CLUB,
    )
