"""A year said with a verb that names an event ("How many cars were sold in 2023?") is
the time of the event's rows, the table that refers to the counted rows and keeps a date
(``sales.sale_date``), not a year of the rows themselves (``cars.year``, their model
year) nor a date of another table the event reaches (``patients.date_of_birth``).
ISSUE-45, s63 evtyear: each held statement is what the engine answered before the rule."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, names_event_of, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, key, linked_sql
from tests.unit.sql.test_sql_first_question_wrongs_s63 import DEALER, DEALER_WORDS

TODAY = date(2026, 11, 30)
FLIGHT_WORDS = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))

CLINIC = Catalog(
    "clinic",
    (
        TableInfo(
            "public",
            "doctors",
            columns=(key("doc_id"), col("last_name", "text", ("Doe",)), col("year_reg")),
            primary_key=("doc_id",),
        ),
        TableInfo(
            "public",
            "patients",
            columns=(
                key("patient_id"),
                col("last_name", "text", ("Smith",)),
                col("date_of_birth", "date"),
            ),
            primary_key=("patient_id",),
        ),
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
CLINIC_WORDS = Vocabulary(CLINIC, JoinGraph(CLINIC))

MODEL_YEAR = "SELECT COUNT(*) AS count FROM public.cars AS t0 WHERE (t0.year = 2023)"
PLANE_YEAR = "SELECT COUNT(*) AS count FROM public.planes AS t0 WHERE (t0.year = 2013)"
# the first answer of "How many doctors treated patients in 2025?" once the doctors'
# year was held: the patients' birth dates
BORN = (
    "SELECT COUNT(DISTINCT t0.doc_id) AS count FROM public.doctors AS t0 "
    "JOIN public.treatments AS t1 ON t1.doc_id = t0.doc_id "
    "JOIN public.patients AS t2 ON t2.patient_id = t1.patient_id "
    "WHERE (t2.date_of_birth >= '2025-01-01' AND t2.date_of_birth < '2026-01-01')"
)


def _table(words: Vocabulary, name: str) -> TableInfo:
    table = words.catalog.table(f"public.{name}")
    assert table is not None
    return table


@pytest.mark.parametrize(
    ("word", "table", "names"),
    [
        ("sold", "sales", True),
        ("bought", "sales", True),
        ("made", "sales", False),
        ("treated", "treatments", True),
        ("born", "treatments", False),
    ],
)
def test_a_verb_names_the_table_recording_its_event(word: str, table: str, names: bool) -> None:
    words = CLINIC_WORDS if table == "treatments" else DEALER_WORDS
    assert names_event_of(words, word, _table(words, table)) is names


def test_flew_names_the_flights() -> None:
    assert names_event_of(FLIGHT_WORDS, "flew", _table(FLIGHT_WORDS, "flights"))
    assert not names_event_of(FLIGHT_WORDS, "built", _table(FLIGHT_WORDS, "flights"))


@pytest.mark.parametrize(
    ("question", "sql", "words", "said"),
    [
        (
            "How many cars were sold in 2023?",
            MODEL_YEAR,
            DEALER_WORDS,
            r"cars\.year.*sales\.sale_date",
        ),
        ("How many planes flew in 2013?", PLANE_YEAR, FLIGHT_WORDS, r"planes\.year.*flights\."),
    ],
)
def test_the_counted_rows_year_is_not_their_events_time(
    question: str, sql: str, words: Vocabulary, said: str
) -> None:
    ctx = read_question(question, words, TODAY)
    with pytest.raises(LinkError, match=r"'in 20\d\d' is a time.*" + said):
        verify_statement(ctx, sql)


@pytest.mark.parametrize(
    ("question", "sql", "words"),
    [
        # the year's verb names no event table: the rows' own year
        ("How many cars were made in 2023?", MODEL_YEAR, DEALER_WORDS),
        ("How many planes were built in 2013?", PLANE_YEAR, FLIGHT_WORDS),
        # a year said as a kind, not a window
        ("How many cars from 2023 are there?", MODEL_YEAR, DEALER_WORDS),
        # the counted rows are the event's: their own year is their time
        (
            "How many flights flew in 2013?",
            "SELECT COUNT(*) AS count FROM public.flights AS t0 WHERE (t0.year = 2013)",
            FLIGHT_WORDS,
        ),
    ],
)
def test_a_year_of_the_rows_said_with_another_verb_stands(
    question: str, sql: str, words: Vocabulary
) -> None:
    verify_statement(read_question(question, words, TODAY), sql)


def test_a_date_of_a_table_the_event_reaches_is_not_the_events_time() -> None:
    ctx = read_question("How many doctors treated patients in 2025?", CLINIC_WORDS, TODAY)
    with pytest.raises(LinkError, match=r"patients\.date_of_birth.*treatments\.start_dt"):
        verify_statement(ctx, BORN)


def test_a_date_said_with_its_own_verb_stands() -> None:
    # "born in 2025": the year's verb is the birth's, on the patients' rows
    ctx = read_question("How many doctors treated patients born in 2025?", CLINIC_WORDS, TODAY)
    verify_statement(ctx, BORN)


def test_the_counted_rows_own_date_said_with_their_events_verb_is_refused() -> None:
    sql = (
        "SELECT COUNT(*) AS count FROM public.patients AS t0 "
        "WHERE (t0.date_of_birth >= '2025-01-01' AND t0.date_of_birth < '2026-01-01')"
    )
    ctx = read_question("How many patients were treated in 2025?", CLINIC_WORDS, TODAY)
    with pytest.raises(LinkError, match=r"patients\.date_of_birth.*treatments\.start_dt"):
        verify_statement(ctx, sql)
    verify_statement(
        read_question("How many patients were born in 2025?", CLINIC_WORDS, TODAY), sql
    )


def test_rows_counted_in_their_events_year_are_counted_through_the_event() -> None:
    # said again as "How many cars had sales in 2023?": each car once, by the sale date
    tree = sqlglot.parse_one(linked_sql("How many cars were sold in 2023?", DEALER, TODAY))
    assert (
        tree.sql()
        == sqlglot.parse_one(
            "SELECT COUNT(DISTINCT t0.car_id) AS count FROM public.sales AS t0 "
            "WHERE (t0.sale_date >= '2023-01-01' AND t0.sale_date < '2024-01-01')"
        ).sql()
    )
    # the year's verb names no event: the cars' own year, as asked
    assert "t0.year = 2023" in linked_sql("How many cars were made in 2023?", DEALER, TODAY)
