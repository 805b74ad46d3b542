"""A statement that joins only to restrict the rows of the table it shows is written as
those rows having a match (``results.with_semijoins``, issue 45, s61): each row once, no
DISTINCT and no key to keep two of one name apart, the shape a follow-up narrowing the
earlier rows to those with a match has. Where the joined tables give a column, an
aggregate, a group test other than "at least one", an order, or the join is a self-join,
an outer join or one that lists a row per match, the statement is left as composed."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from services.sql.results import as_asked, joined, with_labels, with_semijoins
from tests.unit.sql.schemas import linked_statement
from tests.unit.sql.statements import assert_same_sql
from tests.unit.sql.test_sql_followup_existence import JOINED
from tests.unit.sql.test_sql_followup_semijoin import CATALOG as VENUES
from tests.unit.sql.test_sql_row_labels import TEACHING, TODAY

_THROUGH = (
    "FROM public.teacher AS t0 JOIN public.course_arrange AS t1 ON t1.teacher_id = t0.teacher_id "
    "JOIN public.course AS t2 ON t2.course_id = t1.course_id"
)
_HAVING = (
    "EXISTS (SELECT 1 FROM public.course_arrange AS sj1 JOIN public.course AS sj2 ON "
    "sj2.course_id = sj1.course_id WHERE sj1.teacher_id = t0.teacher_id AND sj2.course = 'Music')"
)


def test_a_distinct_read_through_joins_is_the_rows_having_a_match():
    """ "the names of the teachers older than 30 who teach Music": the joins repeat a
    teacher once per arrangement and DISTINCT only undid that; as an EXISTS each teacher
    is one row, the condition on the teacher stays outside, the course's inside."""
    sql = f"SELECT DISTINCT t0.name AS name {_THROUGH} WHERE t2.course = 'Music' AND t0.age > 30"
    written = with_semijoins(sql, TEACHING)
    expected = f"SELECT t0.name AS name FROM public.teacher AS t0 WHERE t0.age > 30 AND {_HAVING}"
    assert_same_sql(written, expected)
    # a listing of names alone: no key added, as the follow-up shows the earlier names
    assert with_labels(written, TEACHING) == written


def test_groups_kept_for_having_at_least_one_row_are_the_rows_having_a_match():
    sql = (
        "SELECT t0.name AS name FROM public.teacher AS t0 JOIN public.course_arrange AS t1 "
        "ON t1.teacher_id = t0.teacher_id GROUP BY t0.name, t0.teacher_id "
        "HAVING COUNT(DISTINCT (t1.course_id, t1.teacher_id, t1.grade)) >= 1"
    )
    assert_same_sql(
        with_semijoins(sql, TEACHING),
        "SELECT t0.name AS name FROM public.teacher AS t0 WHERE EXISTS (SELECT 1 FROM "
        "public.course_arrange AS sj1 WHERE sj1.teacher_id = t0.teacher_id)",
    )


def test_the_linker_lists_teachers_having_a_course_by_name_as_a_follow_up_does():
    """Asked outright, "the names of the teachers who teach Music" and "… that have at
    least one course arrangement" show the names alone, over an EXISTS: the statement a
    follow-up narrowing "What are the names of the teachers?" writes."""
    for question in (
        "What are the names of the teachers who teach Music?",
        "What are the names of the teachers that have at least one course arrangement?",
    ):
        tree = linked_statement(question, TEACHING, TODAY)
        assert [e.alias_or_name for e in tree.expressions] == ["name"], question
        assert tree.find(exp.Exists) is not None and not tree.args.get("joins"), question


def test_joins_to_what_each_row_references_are_a_match_too():
    """A concert's one stadium (joined by its whole key) repeats no concert: the rows are
    the concerts whose stadium is large, written as their having one."""
    sql = (
        "SELECT t0.year AS year FROM concert AS t0 JOIN stadium AS t1 "
        "ON t1.stadium_id = t0.stadium_id WHERE t1.capacity > 5000"
    )
    assert_same_sql(
        with_semijoins(sql, VENUES),
        "SELECT t0.year AS year FROM concert AS t0 WHERE EXISTS (SELECT 1 FROM stadium AS sj1 "
        "WHERE sj1.stadium_id = t0.stadium_id AND sj1.capacity > 5000)",
    )


@pytest.mark.parametrize(
    "sql",
    [
        # a column of a joined table shown
        f"SELECT DISTINCT t0.name AS name, t2.course AS course {_THROUGH}",
        # an aggregate over the joined table, and a count above one
        "SELECT t0.name AS name, COUNT(t1.course_id) AS n FROM public.teacher AS t0 JOIN "
        "public.course_arrange AS t1 ON t1.teacher_id = t0.teacher_id "
        "GROUP BY t0.teacher_id, t0.name",
        "SELECT t0.name AS name FROM public.teacher AS t0 JOIN public.course_arrange AS t1 ON "
        "t1.teacher_id = t0.teacher_id GROUP BY t0.teacher_id, t0.name HAVING COUNT(*) >= 2",
        # groups ordered by how many rows each has
        "SELECT t0.name AS name FROM public.teacher AS t0 JOIN public.course_arrange AS t1 ON "
        "t1.teacher_id = t0.teacher_id GROUP BY t0.teacher_id, t0.name HAVING COUNT(*) >= 1 "
        "ORDER BY COUNT(*) DESC",
        # a self-join: which alias's rows are listed is not the table's to say
        "SELECT DISTINCT t0.name AS name FROM public.teacher AS t0 JOIN public.teacher AS t1 "
        "ON t1.hometown = t0.hometown WHERE t1.age > 60",
        # ordered by a joined column
        f"SELECT DISTINCT t0.name AS name {_THROUGH} ORDER BY t2.course LIMIT 3",
        # an outer join keeps rows with no match
        "SELECT DISTINCT t0.name AS name FROM public.teacher AS t0 LEFT JOIN "
        "public.course_arrange AS t1 ON t1.teacher_id = t0.teacher_id",
        # distinct values asked for: a kind the rows fall in
        f"SELECT DISTINCT t0.hometown AS hometown {_THROUGH} WHERE t2.course = 'Music'",
        # a row per arrangement, no DISTINCT: the repeats are the answer
        f"SELECT t0.name AS name {_THROUGH} WHERE t2.course = 'Music'",
    ],
)
def test_statements_the_joined_tables_shape_are_left_as_composed(sql):
    assert with_semijoins(sql, TEACHING) == sql


async def test_a_follow_up_places_the_written_semi_join_as_it_placed_the_join():
    """The follow-up path links its words with the same linker: "with a concert" now
    comes back written as an EXISTS and is placed on the earlier statement as the joined
    reading was (its tables named as the rewrite names them)."""
    from tests.unit.sql.test_sql_followup_conditions import Linker
    from tests.unit.sql.test_sql_followup_semijoin import STADIUMS, _filtered

    written = with_semijoins(JOINED, VENUES)
    assert sqlglot.parse_one(written).find(exp.Exists) is not None
    got = await _filtered(STADIUMS, "with a concert", Linker({"stadium": written}))
    joined = await _filtered(STADIUMS, "with a concert", Linker({"stadium": JOINED}))
    assert_same_sql(got.replace("f_sj", "f_t"), joined)


@pytest.mark.parametrize(
    ("sql", "catalog"),
    [
        (
            f"SELECT DISTINCT t0.teacher_id AS teacher_id, t0.name AS name {_THROUGH} "
            "WHERE t0.age > 30 AND t2.course = 'Music'",
            TEACHING,
        ),
        (
            "SELECT t0.year AS year FROM concert AS t0 JOIN stadium AS t1 "
            "ON t1.stadium_id = t0.stadium_id WHERE t1.capacity > 5000",
            VENUES,
        ),
    ],
)
def test_a_follow_up_reads_the_joins_the_semi_join_stands_for(sql, catalog):
    """A follow-up reads a linked statement's tables and joins ("which stadiums were they
    at?" restricts the joined concerts; "now the ones with AirCon" swaps the joined
    feature's value): ``joined`` gives it the statement as composed, the key shown under
    the DISTINCT as before."""
    written = with_semijoins(sql, catalog)
    assert written != sql
    assert_same_sql(joined(written, catalog), sql)
    # an EXISTS the rewrite did not write (a NOT EXISTS, a statement with joins) stays
    for other in (
        "SELECT t0.name FROM public.teacher AS t0 WHERE NOT EXISTS (SELECT 1 FROM "
        "public.course_arrange AS x WHERE x.teacher_id = t0.teacher_id)",
        sql,
    ):
        assert joined(other, catalog) == other


def test_a_follow_up_built_on_the_joins_is_written_as_the_question_asked_outright():
    """ "now the ones who teach Art" after "the names of the teachers who teach Music":
    the swap edits the joined reading (the key shown under its DISTINCT) and is written
    back as the question asked outright is, the key shown only where the label rule shows
    it (beside another value of the rows, an age), not beside the names alone."""
    music = f"SELECT DISTINCT t0.name AS name {_THROUGH} WHERE t2.course = 'Music'"
    art = music.replace("'Music'", "'Art'")
    asked = with_semijoins(music, TEACHING)
    edited = joined(asked, TEACHING).replace("'Music'", "'Art'")
    assert_same_sql(as_asked(edited, asked, TEACHING), with_semijoins(art, TEACHING))
    aged = f"SELECT DISTINCT t0.teacher_id, t0.name, t0.age {_THROUGH} WHERE t2.course = 'Art'"
    shown = sqlglot.parse_one(as_asked(aged, asked, TEACHING)).expressions
    assert [e.alias_or_name for e in shown] == ["teacher_id", "name", "age"]
    # a key the statement it edits shows stays
    keyed = "SELECT t0.teacher_id AS teacher_id, t0.name AS name FROM public.teacher AS t0"
    listed = f"SELECT DISTINCT t0.teacher_id AS teacher_id, t0.name AS name {_THROUGH}"
    got = sqlglot.parse_one(as_asked(listed, keyed, TEACHING))
    assert [e.alias_or_name for e in got.expressions] == ["teacher_id", "name"]


def test_the_rewrite_marks_its_own_exists_whatever_the_statement_called_its_tables():
    """``joined`` reads back only an EXISTS the rewrite wrote, known by the names the
    rewrite gives its sub-query's tables, not by the linker's ``t1``, ``t2``: a statement
    whose joins are called otherwise (a follow-up's, a caller's) is read back all the
    same, and an EXISTS over ``t1`` another writer composed stays as written."""
    sql = (
        "SELECT DISTINCT c.name AS name FROM public.teacher AS c JOIN public.course_arrange "
        "AS a ON a.teacher_id = c.teacher_id JOIN public.course AS k ON k.course_id = a.course_id "
        "WHERE k.course = 'Music'"
    )
    written = with_semijoins(sql, TEACHING)
    inner = sqlglot.parse_one(written).find(exp.Exists)
    assert inner is not None
    named = {t.alias_or_name for t in inner.find_all(exp.Table)}
    assert named and not named & {"a", "k"}
    back = sqlglot.parse_one(joined(written, TEACHING))
    assert back.find(exp.Exists) is None and len(back.args["joins"]) == 2
    assert "'Music'" in back.sql()
    composed = (
        "SELECT t0.name AS name FROM public.teacher AS t0 WHERE EXISTS (SELECT 1 FROM "
        "public.course_arrange AS t1 WHERE t1.teacher_id = t0.teacher_id)"
    )
    assert joined(composed, TEACHING) == composed
