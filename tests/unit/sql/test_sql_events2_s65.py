"""Three linker misses of the cold defog v8 script and a probe (ISSUE-45, s65 events2),
through the real linker and verifier: a month window said after a "per" grouping read
into the measure's words ("number of buys per ticker in april 2023" refused: no date
column in scope), rows said with their event's verb per a column of theirs ("cars sold
per make", refused naming sales), and "visitors who never visited a museum" read with the
verb's object as the rows (the museums never visited). Each held statement is what the
engine answered, or the refusal it gave, before the rule."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.linker import LinkError, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import linked_sql
from tests.unit.sql.test_sql_first_question_wrongs_s63 import DEALER, DEALER_WORDS
from tests.unit.sql.test_sql_linker import BROKER
from tests.unit.sql.test_sql_linker import MUSEUMS as MUSEUMS_NO_VISITORS
from tests.unit.sql.test_sql_naming_key import MUSEUMS

TODAY = date(2026, 11, 30)

BUYS_PER_TICKER = (
    "SELECT t1.sbtickerid AS sbtickerid, t1.sbtickersymbol AS sbtickersymbol, "
    "t1.sbtickername AS sbtickername, COUNT(*) AS count FROM public.sbtransaction AS t0 "
    "JOIN public.sbticker AS t1 ON t1.sbtickerid = t0.sbtxtickerid "
    "WHERE (t0.sbtxdatetime >= '{0}' AND t0.sbtxdatetime < '{1}') AND (t0.sbtxtype = 'buy') "
    "GROUP BY t1.sbtickerid, t1.sbtickersymbol, t1.sbtickername"
)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("number of buys per ticker in april 2023", ("2023-04-01", "2023-05-01")),
        ("number of buys in april 2023 per ticker", ("2023-04-01", "2023-05-01")),
        ("number of buys per ticker in Q1 2023", ("2023-01-01", "2023-04-01")),
        ("how many buys per ticker in the first quarter of 2023", ("2023-01-01", "2023-04-01")),
    ],
)
def test_a_month_window_is_no_word_of_the_counted_rows_or_their_grouping(
    question: str, window: tuple[str, str]
) -> None:
    """Without the rule: refused, "the question names a time window but no date column
    is in scope" — the window's words kept in the measure's made "per ticker in april
    2023" no grouping, and the tickers (no date of theirs) the counted rows."""
    assert linked_sql(question, BROKER, TODAY) == BUYS_PER_TICKER.format(*window)


SALES_PER = (
    "SELECT t1.{0} AS {0}, COUNT(*) AS count FROM public.sales AS t0 "
    "JOIN public.cars AS t1 ON t1.id = t0.car_id GROUP BY t1.{0}"
)


@pytest.mark.parametrize(
    ("question", "column"),
    [
        ("cars sold per make", "make"),
        ("number of cars sold per make", "make"),
        ("How many cars were sold per color?", "color"),
    ],
)
def test_rows_said_with_their_events_verb_per_a_column_count_the_events(
    question: str, column: str
) -> None:
    """Without the rule: refused, "'sold' is what the sales rows record of the cars
    rows, and the statement does not read sales" (s64 probes4's check)."""
    assert linked_sql(question, DEALER, TODAY) == SALES_PER.format(column)


def test_rows_said_with_a_qualifier_and_their_events_verb_stay_refused() -> None:
    # "red cars sold per make": the sales said instead would drop "red"
    with pytest.raises(LinkError, match="'sold' is what the sales rows record"):
        linked_sql("red cars sold per make", DEALER, TODAY)


def test_a_number_in_thousands_must_be_in_the_statement() -> None:
    """Without the rule the statement that drops "over 30k" passed the verifier: the
    follow-up "only ones that went for over 30k" answered every sale per color."""
    ctx = read_question("cars sold per color that went for over 30k?", DEALER_WORDS, TODAY)
    with pytest.raises(LinkError, match="does not use the number 30000"):
        verify_statement(ctx, SALES_PER.format("color"))


VISITORS_WITH_NO_VISIT = (
    "SELECT {0} FROM public.visitor AS t0 WHERE (NOT EXISTS (SELECT 1 FROM public.visit AS x "
    "WHERE x.visitor_id = t0.id))"
)


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("visitors who never visited a museum", "t0.name AS name"),
        ("list visitors that have not visited any museum", "t0.name AS name"),
        ("Find the visitors who did not visit any museum", "t0.name AS name"),
        ("How many visitors never visited a museum?", "COUNT(*) AS count"),
    ],
)
def test_rows_that_never_did_the_event_are_those_said_before_the_negation(
    question: str, shown: str
) -> None:
    """Without the reading: refused ("the statement shows what the visitors refer to,
    not the visitors", "no direct key links visitor and museum"); the statement read as
    asked listed the visits' museum ids with no museum."""
    assert linked_sql(question, MUSEUMS, TODAY) == VISITORS_WITH_NO_VISIT.format(shown)


def test_the_verbs_object_is_not_taken_for_the_rows_never_visited() -> None:
    """Without the refusal: ``SELECT t0.name FROM museum AS t0 WHERE NOT EXISTS (SELECT 1
    FROM visit …)``, the museums never visited for "visitors who never visited a museum"
    on a schema with no visitor table — a confident wrong answer."""
    with pytest.raises(LinkError, match="could not place the rows that never visited museum"):
        linked_sql("visitors who never visited a museum", MUSEUMS_NO_VISITORS, TODAY)


def test_rows_never_said_with_an_object_keep_their_reading() -> None:
    assert linked_sql("museums that were never visited", MUSEUMS, TODAY) == (
        "SELECT t0.name AS name FROM public.museum AS t0 WHERE (NOT EXISTS (SELECT 1 "
        "FROM public.visit AS x WHERE x.museum_id = t0.museum_id))"
    )
