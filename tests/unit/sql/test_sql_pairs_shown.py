"""Issue 45 (s64, resref): rows listed through a table of pairs ("what courses do they
teach?" after "teachers older than 35") show the names of the rows on the pairs' other
side where a range, a ranking's cut or an earlier answer chose several of them: each
pair is the fact the table records, and the courses alone lose whose each is. The
question asked outright and the follow-up show the same columns. An equality with a
stated value, a table joined by a key of its own (events), or the pairs table's own
columns leave the statement as composed. The real linker and verifier read each question."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.conversation import deciding, labels, pointed, restrict, subject
from services.sql.results import as_asked, joined, with_pairs
from tests.unit.sql.schemas import col, linked_statement
from tests.unit.sql.test_sql_row_labels import TEACHING, TODAY


def _shown(tree: exp.Expr) -> list[str]:
    return [e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)]


def _sql(question: str, catalog: Catalog = TEACHING) -> str:
    return linked_statement(question, catalog, TODAY).sql(dialect="postgres")


def _follow_up(first: str, question: str, catalog: Catalog = TEACHING) -> exp.Select:
    """The result-reference path as the engine takes it: the question about the earlier
    rows' table, linked, its joins restricted to the earlier rows, written as asked."""
    earlier = _sql(first, catalog)
    about = subject(earlier, catalog)
    asked = _sql(pointed(question, about.table, catalog), catalog)
    sql = restrict(
        joined(asked, catalog),
        earlier,
        about,
        labels(earlier, about, catalog),
        deciding(earlier, about, catalog),
        catalog=catalog,
    )
    tree = sqlglot.parse_one(as_asked(sql, asked, catalog), dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def test_courses_of_teachers_a_range_chose_show_whose_each_is_on_both_paths():
    alone = linked_statement("What courses do the teachers older than 35 teach?", TEACHING, TODAY)
    follow_up = _follow_up("List the teachers older than 35.", "what courses do they teach")
    assert _shown(alone) == ["name", "course"]
    assert _shown(follow_up) == _shown(alone)


def test_an_earlier_ranking_cut_is_several_rows_too():
    follow_up = _follow_up("Who are the 2 oldest teachers?", "what courses do they teach")
    assert _shown(follow_up) == ["name", "course"]


def test_an_equality_with_a_stated_value_shows_the_courses_alone():
    """Every teacher from one hometown shares what the question named: no pair shown."""
    alone = linked_statement(
        "What courses do the teachers from Bolton County Borough teach?", TEACHING, TODAY
    )
    assert _shown(alone) == ["course"]


_THROUGH = (
    "FROM public.course AS t0 JOIN public.course_arrange AS t1 ON t1.course_id = t0.course_id "
    "JOIN public.teacher AS t2 ON t2.teacher_id = t1.teacher_id"
)


def test_the_pairs_tables_own_columns_and_row_cuts_are_left_as_composed():
    for sql in (
        f"SELECT DISTINCT t1.grade AS grade {_THROUGH} WHERE t2.age > 35",
        f"SELECT DISTINCT t0.course AS course {_THROUGH} WHERE t2.age > 35 LIMIT 2",
        f"SELECT t0.course AS course, COUNT(*) AS n {_THROUGH} WHERE t2.age > 35 GROUP BY 1",
    ):
        assert with_pairs(sql, TEACHING) == sql, sql


SALES = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            columns=(col("id"), col("make", "text", ("Toyota",)), col("cost")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "customers",
            columns=(col("id"), col("first_name", "text", ("Ann",)), col("last_name", "text")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "sales",
            columns=(col("id"), col("car_id"), col("customer_id"), col("sale_price")),
            primary_key=("id",),
            foreign_keys=(
                ForeignKeyInfo(("car_id",), "public.cars", ("id",)),
                ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),
            ),
        ),
    ),
)


def test_rows_reached_through_events_keyed_of_their_own_are_left_alone():
    """A sale is an event with its own key, many per customer and car: "which customers
    bought cars that cost more than 50000?" asks for the customers, each once."""
    sql = (
        "SELECT DISTINCT t0.first_name AS first_name FROM public.customers AS t0 "
        "JOIN public.sales AS t1 ON t1.customer_id = t0.id "
        "JOIN public.cars AS t2 ON t2.id = t1.car_id WHERE t2.cost > 50000"
    )
    assert with_pairs(sql, SALES) == sql
