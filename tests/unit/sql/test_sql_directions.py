"""Parallel references: of a table's two references to one table whose names say a
direction (``flights.origin``, ``flights.dest`` -> ``airports``), a statement that reads
another than the question's direction says is refused naming both; one that reads it
passes. The rule is shown failing on the statement it guards against."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.verify import verify_statement
from services.sql.words import FROM, TO, name_direction, question_directions, role_words, says_role
from tests.unit.sql.flights import FLIGHTS

VOCABULARY = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
TODAY = date(2026, 11, 29)


def _joined_on(question: str) -> str:
    graph = read_question(question, VOCABULARY, TODAY).graph
    path = graph.path("public.flights", "public.airports")
    assert path is not None and len(path) == 1
    return path[0].child_column


def test_names_say_the_direction_of_a_reference() -> None:
    assert [name_direction(c) for c in ("origin", "dest", "sourceairport", "destairport")] == [
        FROM,
        TO,
        FROM,
        TO,
    ]
    assert name_direction("student_id") is None
    assert name_direction("friend_id") is None


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("How many flights arrived at airports in the Denver zone?", {TO}),
        ("Which airlines flew to Honolulu?", {TO}),
        ("Give each destination airport and the number of flights to it.", {TO}),
        ("How many flights departed from La Guardia?", {FROM}),
        ("What are the airports that flights from JFK flew to?", {FROM, TO}),
        # a preposition straight before another is stranded: its end point is the
        # relative clause's head, as before nothing
        ("What are the names of the airports JetBlue Airways flew to from JFK?", {FROM, TO}),
        ("Which airports did flights come from in May?", {FROM}),
        # prepositions before no end point say nothing
        ("List the airports from highest to lowest altitude.", set()),
        ("How many flights belong to each airline?", set()),
    ],
)
def test_a_question_says_a_direction_by_its_verbs_and_prepositions(
    question: str, said: set[str]
) -> None:
    assert question_directions(question, frozenset({"airport"})) == said


def test_a_question_joins_along_the_reference_its_direction_names() -> None:
    assert _joined_on("How many flights arrived at Los Angeles Intl?") == "dest"
    assert _joined_on("How many flights departed from La Guardia?") == "origin"
    # no direction, or both: the child's first reference, as before
    assert _joined_on("How many flights are there per airport?") == "origin"
    assert _joined_on("Which airports did flights from JFK fly to?") == "origin"


def test_rows_listed_through_referring_rows_along_the_direction_said_are_each_listed_once() -> None:
    linked = QuestionLinker(
        "What are the names of the airlines that flew to Pacific/Honolulu?",
        VOCABULARY,
        TODAY,
        check=verify_statement,
    ).link()
    sql = " ".join(linked.sql.split())
    assert "= sj1.dest" in sql  # the direction said, not the first reference
    # an airline once, not once per flight: the airlines having such a flight
    assert sql.startswith("SELECT t0.name AS name FROM public.airlines AS t0 WHERE EXISTS")


JOIN = "SELECT COUNT(*) AS count FROM public.flights AS t0 JOIN public.airports AS t1 ON "


@pytest.mark.parametrize(
    ("question", "wrong", "right"),
    [
        (
            "How many flights arrived at airports in the America/Denver zone?",
            JOIN + "t1.faa = t0.origin WHERE t1.tzone = 'America/Denver'",
            JOIN + "t1.faa = t0.dest WHERE t1.tzone = 'America/Denver'",
        ),
        (
            # both directions said: both references read
            "How many flights from JFK arrived at airports in the America/Denver zone?",
            JOIN + "t1.faa = t0.origin WHERE t1.tzone = 'America/Denver' AND t1.faa = 'JFK'",
            JOIN + "t1.faa = t0.dest WHERE t1.tzone = 'America/Denver' AND t0.origin = 'JFK'",
        ),
    ],
)
def test_a_statement_reads_the_reference_the_direction_says(
    question: str, wrong: str, right: str
) -> None:
    ctx = read_question(question, VOCABULARY, TODAY)
    with pytest.raises(LinkError) as refused:
        verify_statement(ctx, wrong)
    assert "flights.dest" in str(refused.value)
    verify_statement(ctx, right)


def test_a_question_that_says_no_direction_joins_along_neither_by_default() -> None:
    ctx = read_question("How many flights are there per airport?", VOCABULARY, TODAY)
    with pytest.raises(LinkError) as refused:
        verify_statement(
            ctx,
            "SELECT t1.name, COUNT(*) AS count FROM public.flights AS t0 JOIN public.airports "
            "AS t1 ON t1.faa = t0.origin GROUP BY t1.name, t1.faa",
        )
    assert "flights.origin or flights.dest" in str(refused.value)


def test_a_question_that_says_no_direction_and_reaches_no_airport_is_left_alone() -> None:
    ctx = read_question("How many flights did JetBlue Airways operate?", VOCABULARY, TODAY)
    verify_statement(
        ctx,
        "SELECT COUNT(*) AS count FROM public.flights AS t0 JOIN public.airlines AS t1 ON "
        "t1.carrier = t0.carrier WHERE t1.name = 'JetBlue Airways'",
    )


def test_airports_flown_to_from_a_named_one_are_not_read_through_the_origin() -> None:
    """ "flew to from JFK": the stranded "to" says where the listed airports are; a
    statement joining them on ``flights.origin`` (JFK itself) is never answered."""
    with pytest.raises(LinkError) as refused:
        QuestionLinker(
            "What are the names of the airports JetBlue Airways flew to from JFK?",
            VOCABULARY,
            TODAY,
            check=verify_statement,
        ).link()
    assert "flights.dest" in str(refused.value)


def test_only_references_whose_names_say_a_direction_are_paired() -> None:
    graph = JoinGraph(FLIGHTS)
    assert {
        w: e.child_column for w, e in graph.directed[("public.flights", "public.airports")].items()
    } == {
        FROM: "origin",
        TO: "dest",
    }


def test_a_reference_says_its_role_by_the_words_its_name_adds_to_the_tables() -> None:
    assert role_words("home_team_id", {"match", "team"}) == {"home"}
    assert role_words("manager_id", {"review", "employee"}) == {"manager"}
    assert role_words("employee_id", {"review", "employee"}) == frozenset()
    # the relation's object carries the child table's name: "liked" of ``likes``
    assert role_words("friend_id", {"friend", "highschooler"}) == frozenset()
    assert role_words("liked_id", {"like", "highschooler"}) == frozenset()
    assert role_words("student_id", {"friend", "highschooler"}) == {"student"}


def test_a_question_says_a_role_by_its_word_or_the_verb_whose_agent_it_names() -> None:
    assert says_role(frozenset({"home"}), ("home", "match", "team"))
    assert says_role(frozenset({"manager"}), ("review", "managed", "employee"))
    assert says_role(frozenset({"seller"}), ("sells", "car"))
    assert not says_role(frozenset({"away"}), ("home", "match"))
    # a short stem says nothing by accident: "buyer" is not "buses"
    assert not says_role(frozenset({"buyer"}), ("buses",))
