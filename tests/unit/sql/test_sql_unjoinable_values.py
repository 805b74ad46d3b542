"""A stored value in a table no join reaches from the tables a question reads is not
the question's value: beside a look-alike copy of another database (a genre 'Opera', a
track titled 'Honolulu'), the word goes to the value the joined tables hold, or to none,
instead of leaving a statement that cannot be composed ("no join path")."""

from __future__ import annotations

from datetime import date

import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import QuestionLinker, Vocabulary
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "text", samples: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, sample_values=samples)


_FLIGHTS = (
    TableInfo(
        "public",
        "airlines",
        columns=(_col("carrier", samples=("AA", "HA")), _col("name", samples=("Hawaiian Air",))),
        primary_key=("carrier",),
    ),
    TableInfo(
        "public",
        "airports",
        columns=(_col("faa", samples=("HNL", "DEN")), _col("name", samples=("Honolulu Intl",))),
        primary_key=("faa",),
    ),
    TableInfo(
        "public",
        "flights",
        columns=(_col("flight_id", "integer"), _col("carrier"), _col("dest")),
        primary_key=("flight_id",),
        foreign_keys=(
            ForeignKeyInfo(("carrier",), "public.airlines", ("carrier",)),
            ForeignKeyInfo(("dest",), "public.airports", ("faa",)),
        ),
    ),
)
# another database's tables copied beside them: joined to each other, to nothing above
_COPIES = (
    TableInfo(
        "public",
        "tmp_music_genre",
        columns=(_col("genre_id", "integer"), _col("name", samples=("Blues", "Opera"))),
        primary_key=("genre_id",),
    ),
    TableInfo(
        "public",
        "int_music_track",
        columns=(
            _col("track_id", "integer"),
            _col("name", samples=("Honolulu", "Aloha")),
            _col("genre_id", "integer"),
        ),
        primary_key=("track_id",),
        foreign_keys=(ForeignKeyInfo(("genre_id",), "public.tmp_music_genre", ("genre_id",)),),
    ),
)
WIDE = Catalog("wide", (*_FLIGHTS, *_COPIES))
PLAIN = Catalog("plain", _FLIGHTS)


def _sql(question: str, catalog: Catalog) -> str:
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    sqlglot.parse_one(linked.sql, dialect="postgres")
    return " ".join(linked.sql.split())


def test_a_word_that_begins_with_an_unjoinable_value_is_no_condition_on_the_count() -> None:
    # "operate" begins with the copied genre 'Opera': counting flights, no join reaches it
    question = "For each airline name, how many flights did it operate?"
    sql = _sql(question, WIDE)
    assert "music" not in sql and "Opera" not in sql
    assert sql == _sql(question, PLAIN)


def test_a_name_held_exactly_by_an_unjoinable_table_goes_to_the_joined_value() -> None:
    # a track titled 'Honolulu' cannot be joined to airlines; the airport's name can
    question = "What are the names of the airlines that flew to Honolulu?"
    sql = _sql(question, WIDE)
    assert "music" not in sql
    assert "'Honolulu Intl'" in sql
    assert sql == _sql(question, PLAIN)
