"""A year or a count said with a verb that names an event ("How many cars were sold in
2023?") reads the event's rows: the table that refers to the counted rows and records the
verb's event (``linker.names_event_of``: ``sales`` for "sold", ``treatments`` for
"treated", or a table with a column keeping the verb's time, ``flights.dep_time`` for
"departed"), its date the year's (``sales.sale_date``), not a year of the rows themselves
(``cars.year``, their model year) nor a date of another table the event reaches
(``patients.date_of_birth``). A year said as a kind of the rows ("cars from 2022") stays
theirs, and the verb then counts the rows the event happened to. ISSUE-45, s63 evtyear and
s64 events: each held statement is what the engine answered before the rule."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import (
    LinkError,
    Vocabulary,
    names_event_by_column,
    names_event_of,
    read_question,
)
from services.sql.verify import verify_statement
from tests.unit.sql.dealer import DEALER, DEALER_WORDS
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, key, linked_sql

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


# merchants and the coupons they issue, each kept with its own creation time
SHOP = Catalog(
    "shop",
    (
        TableInfo(
            "public",
            "merchants",
            columns=(key("mid"), col("name", "text", ("Acme",)), col("created_at", "timestamp")),
            primary_key=("mid",),
        ),
        TableInfo(
            "public",
            "coupons",
            columns=(key("cid"), key("merchant_id"), col("created_at", "timestamp")),
            primary_key=("cid",),
            foreign_keys=(ForeignKeyInfo(("merchant_id",), "public.merchants", ("mid",)),),
        ),
    ),
)
SHOP_WORDS = Vocabulary(SHOP, JoinGraph(SHOP))


def _same(sql: str, expected: str) -> None:
    assert sqlglot.parse_one(sql).sql() == sqlglot.parse_one(expected).sql()


@pytest.mark.parametrize(
    ("word", "names"),
    [
        ("departed", True),  # dep_time: the time of the departure
        ("delayed", False),  # dep_delay measures the event, it is no time of it
        ("built", False),
        ("flights", False),  # a noun, not a verb's past
    ],
)
def test_a_verb_names_the_table_that_keeps_its_time(word: str, names: bool) -> None:
    flights = _table(FLIGHT_WORDS, "flights")
    assert names_event_by_column(FLIGHT_WORDS, word, flights) is names
    assert names_event_of(FLIGHT_WORDS, word, flights) is names


def test_a_regular_past_is_read_with_its_e() -> None:
    # "purchased" -> purchase, the lexicon's verb of a sale (not "purchas")
    assert names_event_of(DEALER_WORDS, "purchased", _table(DEALER_WORDS, "sales"))


PLANES_FLOWN = (
    "SELECT COUNT(DISTINCT t0.tailnum) AS count_distinct_tailnum FROM public.flights AS t0 "
    "WHERE (t0.time_hour >= '2013-01-01' AND t0.time_hour < '2014-01-01')"
)


def test_the_planes_year_is_not_their_departures_time() -> None:
    ctx = read_question("How many planes departed in 2013?", FLIGHT_WORDS, TODAY)
    with pytest.raises(LinkError, match=r"planes\.year.*flights\.time_hour"):
        verify_statement(ctx, PLANE_YEAR)


@pytest.mark.parametrize(
    "question", ["How many planes departed in 2013?", "How many planes flew in 2013?"]
)
def test_rows_whose_own_year_the_linker_reads_are_counted_by_the_events_reference(
    question: str,
) -> None:
    # "planes had flights in 2013" still reads planes.year: the distinct tail numbers the
    # flights of 2013 refer to
    _same(linked_sql(question, FLIGHTS, TODAY), PLANES_FLOWN)


def test_patients_treated_in_a_year_are_the_treatments_patients() -> None:
    _same(
        linked_sql("How many patients were treated in 2025?", CLINIC, TODAY),
        "SELECT COUNT(DISTINCT t0.patient_id) AS count_distinct FROM public.treatments AS t0 "
        "WHERE (t0.start_dt >= '2025-01-01' AND t0.start_dt < '2026-01-01')",
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "How many doctors treated patients in 2025?",
            "SELECT COUNT(DISTINCT t0.doc_id) AS count FROM public.treatments AS t0 "
            "WHERE (t0.start_dt >= '2025-01-01' AND t0.start_dt < '2026-01-01')",
        ),
        (
            "How many customers bought cars in 2023?",
            "SELECT COUNT(DISTINCT t0.customer_id) AS count FROM public.sales AS t0 "
            "WHERE (t0.sale_date >= '2023-01-01' AND t0.sale_date < '2024-01-01')",
        ),
    ],
)
def test_doers_of_an_event_on_a_bare_other_side_are_counted_through_it(
    question: str, expected: str
) -> None:
    _same(linked_sql(question, CLINIC if "doctors" in question else DEALER, TODAY), expected)


def test_the_other_side_said_with_a_qualifier_is_not_dropped() -> None:
    # "red cars": counting the sales' customers would drop the colour
    with pytest.raises(LinkError):
        linked_sql("How many customers bought red cars in 2023?", DEALER, TODAY)


KIND_YEAR = "SELECT COUNT(*) AS count FROM public.cars AS t0 WHERE (t0.year = 2022)"


def test_rows_of_a_kind_said_with_their_events_verb_read_the_event() -> None:
    ctx = read_question("How many cars from 2022 were sold?", DEALER_WORDS, TODAY)
    with pytest.raises(LinkError, match=r"'sold'.*sales"):
        verify_statement(ctx, KIND_YEAR)
    # a verb that names no event of the cars: the cars of 2022 themselves
    verify_statement(
        read_question("How many cars from 2022 were made?", DEALER_WORDS, TODAY), KIND_YEAR
    )


@pytest.mark.parametrize(
    ("question", "catalog", "expected"),
    [
        (
            "How many cars from 2022 were sold?",
            DEALER,
            "SELECT COUNT(DISTINCT t0.id) AS count FROM public.cars AS t0 "
            "JOIN public.sales AS t1 ON t1.car_id = t0.id WHERE (t0.year = 2022)",
        ),
        (
            "How many planes from 2004 departed?",
            FLIGHTS,
            "SELECT COUNT(DISTINCT t0.tailnum) AS count FROM public.planes AS t0 "
            "JOIN public.flights AS t1 ON t1.tailnum = t0.tailnum WHERE (t0.year = 2004)",
        ),
    ],
)
def test_a_kind_year_stays_the_rows_and_the_verb_joins_their_event(
    question: str, catalog: Catalog, expected: str
) -> None:
    _same(linked_sql(question, catalog, TODAY), expected)


def test_rows_that_keep_the_verbs_time_themselves_stand() -> None:
    # coupons keep a created_at too, but the merchants' own is their creation
    own = (
        "SELECT COUNT(*) AS count FROM public.merchants AS t0 "
        "WHERE (t0.created_at >= '2023-01-01' AND t0.created_at < '2024-01-01')"
    )
    verify_statement(
        read_question("How many merchants were created in 2023?", SHOP_WORDS, TODAY), own
    )
    # not said again as "How many merchants had coupons?" (every merchant with a coupon)
    with pytest.raises(LinkError, match="'created'"):
        linked_sql("How many merchants were created?", SHOP, TODAY)


# patients with a birth date first and a registration date after it
REGISTRY = Catalog(
    "registry",
    (
        TableInfo(
            "public",
            "patients",
            columns=(
                key("patient_id"),
                col("last_name", "text", ("Smith",)),
                col("date_of_birth", "date"),
                col("date_of_registration", "date"),
            ),
            primary_key=("patient_id",),
        ),
    ),
)


@pytest.mark.parametrize(
    ("question", "column"),
    [
        ("How many patients registered in 2023?", "date_of_registration"),
        ("How many patients were born in 2023?", "date_of_birth"),
    ],
)
def test_a_year_said_with_a_verb_bounds_the_date_its_verb_names(question: str, column: str) -> None:
    _same(
        linked_sql(question, REGISTRY, TODAY),
        f"SELECT COUNT(*) AS count FROM public.patients AS t0 "
        f"WHERE (t0.{column} >= '2023-01-01' AND t0.{column} < '2024-01-01')",
    )
