"""Confident wrongs that probes of first questions found on the study databases
(ISSUE-45, s62): "how many patients did each doctor treat?" counted treatments, one per
visit, not patients; "did delays fall in June?" listed June's days. Shown on catalogs
shaped as derm_treatment, concert_singer, course_teach and nycflights13 are, through the
real linker and verifier."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.flights import flights_refused, flights_sql
from tests.unit.sql.schemas import col, key, linked_sql

TODAY = date(2026, 11, 30)


def _person(name: str, ident: str) -> TableInfo:
    return TableInfo(
        "public",
        name,
        columns=(
            key(ident),
            col("first_name", "text", ("Jane", "Paul")),
            col("last_name", "text", ("Smith", "Jones")),
        ),
        primary_key=(ident,),
    )


# treatments: one row per treatment, keyed by its own id, each naming a patient and a
# doctor (a patient is treated many times by the same doctor)
CLINIC = Catalog(
    "clinic",
    (
        _person("doctors", "doc_id"),
        _person("patients", "patient_id"),
        TableInfo(
            "public",
            "treatments",
            columns=(
                key("treatment_id"),
                key("patient_id"),
                key("doc_id"),
                col("start_dt", "date"),
            ),
            primary_key=("treatment_id",),
            foreign_keys=(
                ForeignKeyInfo(("patient_id",), "public.patients", ("patient_id",)),
                ForeignKeyInfo(("doc_id",), "public.doctors", ("doc_id",)),
            ),
        ),
    ),
)

# course_arrange: pairs of a course and a teacher, keyed by the pair and a grade
SCHOOL = Catalog(
    "school",
    (
        TableInfo(
            "public",
            "course",
            columns=(key("course_id"), col("course", "text", ("Math", "Art"))),
            primary_key=("course_id",),
        ),
        TableInfo(
            "public",
            "teacher",
            columns=(key("teacher_id"), col("name", "text", ("Anne Walker",))),
            primary_key=("teacher_id",),
        ),
        TableInfo(
            "public",
            "course_arrange",
            columns=(key("course_id"), key("teacher_id"), key("grade")),
            primary_key=("course_id", "teacher_id", "grade"),
            foreign_keys=(
                ForeignKeyInfo(("course_id",), "public.course", ("course_id",)),
                ForeignKeyInfo(("teacher_id",), "public.teacher", ("teacher_id",)),
            ),
        ),
    ),
)


def test_rows_counted_per_group_through_events_are_counted_once_each() -> None:
    """ "How many patients did each doctor treat?": the patients are reached through
    treatments (many per patient and doctor), so ``COUNT(*)`` per doctor counted
    treatments; each patient is counted once, by key."""
    sql = linked_sql("How many patients did each doctor treat?", CLINIC, TODAY)
    assert "COUNT(DISTINCT t0.patient_id)" in sql
    assert "GROUP BY" in sql and "doc_id" in sql


def test_the_events_themselves_keep_their_row_count() -> None:
    """Counting the events per group is a row count: nothing refers to them."""
    sql = linked_sql("How many treatments did each doctor give?", CLINIC, TODAY)
    assert "COUNT(*)" in sql and "DISTINCT" not in sql


def test_rows_counted_through_a_table_of_pairs_keep_their_row_count() -> None:
    """A table keyed by the references it pairs (and a grade) is no table of events:
    "how many courses does each teacher teach?" keeps its row count."""
    sql = linked_sql("How many courses does each teacher teach?", SCHOOL, TODAY)
    assert "COUNT(*)" in sql and "DISTINCT" not in sql


def test_a_question_whether_a_figure_fell_is_refused_naming_the_verb() -> None:
    """ "Did delays fall in June?" asks for a comparison of two periods; the verb was
    excused as the one relating the rows, and June's days were listed."""
    assert "'fall'" in flights_refused("Did delays fall in June?")
    assert "changed" in flights_refused("Did departure delays rise in July?")


def test_a_verb_that_relates_rows_is_still_excused() -> None:
    """ "How many flights did JetBlue operate?": an ordinary verb relates the rows."""
    assert "COUNT(*)" in flights_sql("How many flights did JetBlue operate?")
    with pytest.raises(LinkError):
        flights_sql("Did arrival delays increase in 2013?")


# visit: one row per museum and visitor, keyed by the two references
MUSEUMS = Catalog(
    "museums",
    (
        TableInfo(
            "public",
            "museum",
            columns=(key("museum_id"), col("name", "text", ("Plaza Museum",)), col("open_year")),
            primary_key=("museum_id",),
        ),
        TableInfo(
            "public",
            "visitor",
            columns=(key("id"), col("name", "text", ("Gonzalo Higuain",)), col("age")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "visit",
            columns=(key("museum_id"), key("visitor_id"), col("num_of_ticket")),
            primary_key=("museum_id", "visitor_id"),
            foreign_keys=(
                ForeignKeyInfo(("museum_id",), "public.museum", ("museum_id",)),
                ForeignKeyInfo(("visitor_id",), "public.visitor", ("id",)),
            ),
        ),
    ),
)


def test_a_rate_per_measured_row_is_not_grouped_by_a_part_of_its_key() -> None:
    """ "What is the average number of tickets per visit?": the visits are the rows
    averaged; grouped "per visit" by the first part of their key, the answer was one
    average per museum. Answered, it is one figure; otherwise refused."""
    try:
        sql = linked_sql("What is the average number of tickets per visit?", MUSEUMS, TODAY)
    except LinkError:
        return
    assert "GROUP BY" not in sql


def test_a_rate_per_another_table_is_still_grouped() -> None:
    """ "per museum" names the rows the visits refer to: one average per museum."""
    sql = linked_sql("What is the average number of tickets per museum?", MUSEUMS, TODAY)
    assert "AVG(t0.num_of_ticket)" in sql and "GROUP BY t1.museum_id" in sql


# sales: events keyed by their own id, each naming a car (a row sold again and again)
DEALER = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            columns=(key("id"), col("make", "text", ("Toyota", "Ford")), col("cost", "numeric")),
            primary_key=("id",),
        ),
        _person("salespersons", "id"),
        TableInfo(
            "public",
            "sales",
            columns=(key("id"), key("car_id"), key("salesperson_id"), col("sale_price", "numeric")),
            primary_key=("id",),
            foreign_keys=(
                ForeignKeyInfo(("car_id",), "public.cars", ("id",)),
                ForeignKeyInfo(("salesperson_id",), "public.salespersons", ("id",)),
            ),
        ),
    ),
)


def test_things_counted_per_group_through_events_count_each_event() -> None:
    """ "How many cars did each salesperson sell?": a car is a thing, no party; each
    sale of it is a unit sold, so the row count of the sales is kept."""
    sql = linked_sql("How many cars did each salesperson sell?", DEALER, TODAY)
    assert "COUNT(*)" in sql and "DISTINCT" not in sql
