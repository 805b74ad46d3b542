"""Issue 45: a result reference and its spelled-out question show the same columns. A
listing of something asked about rows the question does not name one by one ("the dates
of birth of the patients on medicaid") shows whose each value is: the listed table's
name columns first, as a follow-up about earlier rows ("when were those patients
born?") shows the names the earlier answer said them by. Never where another column
could change the rows (groups, aggregates, DISTINCT), nor where the question said whose
(rows picked by name or key). The real linker and verifier read each question."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo
from services.sql.conversation import deciding, labels, restrict, subject
from services.sql.results import name_columns, with_labels
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)

PATIENTS = Catalog(
    "derm",
    (
        TableInfo(
            "public",
            "patients",
            columns=(
                col("patient_id"),
                col("first_name", "text", ("Alice", "Bob")),
                col("last_name", "text", ("Smith", "Jones")),
                col("date_of_birth", "date"),
                col("email", "text"),
                col("ins_type", "text", ("medicaid", "private")),
            ),
            primary_key=("patient_id",),
        ),
    ),
)
SINGERS = Catalog(
    "concerts",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                col("singer_id"),
                col("name", "text", ("Joe Sharp", "Rose White")),
                col("country", "text", ("France", "Netherlands")),
                col("song_name", "text", ("You", "Sun")),
                col("age"),
            ),
            primary_key=("singer_id",),
        ),
    ),
)


def _shown(tree: exp.Expr) -> list[str]:
    return [e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)]


def _sql(question: str, catalog: Catalog) -> str:
    return linked_statement(question, catalog, TODAY).sql(dialect="postgres")


def test_a_result_reference_and_its_question_spelled_out_show_whose_values_alike():
    """ "when were those patients born?" after "Which patients are on medicaid?" shows
    their names and dates of birth; so does "What are the dates of birth of the patients
    on medicaid?" asked alone: the same columns, the same rows."""
    alone = linked_statement(
        "What are the dates of birth of the patients on medicaid?", PATIENTS, TODAY
    )
    earlier = _sql("Which patients are on medicaid?", PATIENTS)
    about = subject(earlier, PATIENTS)
    asked = _sql("When were the patients born?", PATIENTS)
    sql = restrict(
        asked, earlier, about, labels(earlier, about, PATIENTS), deciding(earlier, about, PATIENTS)
    )
    follow_up = sqlglot.parse_one(sql, dialect="postgres")
    assert _shown(follow_up) == _shown(alone)
    assert _shown(alone) == ["patient_id", "first_name", "last_name", "date_of_birth"]
    # the rows are the same rows: only a column was added, the conditions are unchanged
    assert alone.args["where"] is not None
    assert "DISTINCT" not in alone.sql(dialect="postgres")


def test_a_listing_of_values_names_its_rows_first():
    """The singers' key and name, not their song's name (a name of another thing), before
    their ages; a key or name shown already is not shown twice."""
    ages = linked_statement("What are the ages of the singers from France?", SINGERS, TODAY)
    assert _shown(ages) == ["singer_id", "name", "age"]
    assert name_columns(SINGERS.tables[0]) == ["name"]
    named = (
        "SELECT t0.singer_id AS singer_id, t0.name AS name, t0.age AS age FROM public.singer AS t0"
    )
    assert with_labels(named, SINGERS) == named


def test_where_another_column_could_change_the_rows_or_the_question_said_whose():
    """Groups, aggregates and DISTINCT values would be split by another column; rows
    picked by name or key were named by the question; a table without a name column has
    none to show."""
    for sql in (
        "SELECT DISTINCT t0.country AS country FROM public.singer AS t0",
        "SELECT t0.country AS country, COUNT(*) AS count FROM public.singer AS t0 "
        "GROUP BY t0.country",
        "SELECT AVG(t0.age) AS avg_age FROM public.singer AS t0 WHERE t0.country = 'France'",
        "SELECT t0.age AS age FROM public.singer AS t0 WHERE t0.name = 'Joe Sharp'",
        "SELECT t0.age AS age FROM public.singer AS t0 WHERE t0.singer_id IN (1, 2)",
        "SELECT t0.name AS name FROM public.singer AS t0 WHERE t0.age > 30",
    ):
        assert with_labels(sql, SINGERS) == sql
    cars = Catalog(
        "cars",
        (TableInfo("public", "cars_data", columns=(col("id"), col("mpg")), primary_key=("id",)),),
    )
    plain = "SELECT t0.mpg AS mpg FROM public.cars_data AS t0"
    assert with_labels(plain, cars) == plain
    # a sub-query's value is no name the question said: the rows are still named
    picked = (
        "SELECT t0.age AS age FROM public.singer AS t0 "
        "WHERE t0.singer_id IN (SELECT t1.singer_id FROM public.singer AS t1)"
    )
    assert _shown(sqlglot.parse_one(with_labels(picked, SINGERS))) == ["singer_id", "name", "age"]


def test_a_listing_shows_its_rows_key_before_their_names_as_a_grouped_answer_does():
    """ "Which 3 patients are the tallest?" shows each patient as "Which 3 customers made
    the most transactions?" shows a customer: key, then name. Two patients of one name are
    told apart, and the rows are the same rows (a column added to a listing without
    DISTINCT splits nothing); the key goes just before the names wherever they stand."""
    listed = (
        "SELECT t0.first_name AS first_name, t0.last_name AS last_name, t0.email AS email "
        "FROM public.patients AS t0 ORDER BY t0.email LIMIT 3"
    )
    shown = sqlglot.parse_one(with_labels(listed, PATIENTS), dialect="postgres")
    assert _shown(shown) == ["patient_id", "first_name", "last_name", "email"]
    assert shown.args["limit"] is not None and shown.args["order"] is not None
    after = "SELECT t0.email AS email, t0.first_name AS first_name FROM public.patients AS t0"
    assert _shown(sqlglot.parse_one(with_labels(after, PATIENTS))) == [
        "email",
        "patient_id",
        "first_name",
    ]
    # the linked question itself, through the real linker
    emails = linked_statement("What are the emails of the patients on medicaid?", PATIENTS, TODAY)
    assert _shown(emails) == ["patient_id", "first_name", "last_name", "email"]


def test_no_key_where_it_could_change_the_rows_or_none_is_one_column():
    """DISTINCT names stay distinct names; rows picked by key said whose already; a table
    keyed by two columns (or by none, as a warehouse without declared keys) has no one
    value to show."""
    for sql in (
        "SELECT DISTINCT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0",
        "SELECT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0 "
        "WHERE t0.patient_id = 3",
    ):
        assert with_labels(sql, PATIENTS) == sql
    columns = PATIENTS.tables[0].columns
    for key in ((), ("patient_id", "email")):
        catalog = Catalog(
            "derm", (TableInfo("public", "patients", columns=columns, primary_key=key),)
        )
        sql = "SELECT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0"
        assert with_labels(sql, catalog) == sql


def test_a_listing_of_the_names_alone_answers_with_the_names():
    """ "What are the names of the documents that use them?" asks for names: they are the
    answer, not labels beside one, and the question spelled out shows them alone; so does
    a follow-up "what are their names?" picking the earlier rows by a sub-query."""
    for sql in (
        "SELECT t0.first_name AS first_name, t0.last_name AS last_name "
        "FROM public.patients AS t0 WHERE t0.ins_type = 'medicaid'",
        "SELECT t0.first_name AS first_name FROM public.patients AS t0 "
        "WHERE t0.patient_id IN (SELECT t1.patient_id FROM public.patients AS t1)",
    ):
        assert with_labels(sql, PATIENTS) == sql
