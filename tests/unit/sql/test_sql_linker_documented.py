"""The schema linker reading what a schema documents about itself, on a library schema
that is not the demo CRM and declares no foreign keys: other names in comments, states
that comments define, words of stored values, and proper names from the value index."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, QuestionLinker, Vocabulary
from services.sql.verify import verify_statement

TODAY = date(2026, 3, 15)


def _col(
    name: str,
    data_type: str = "integer",
    comment: str = "",
    *,
    nullable: bool = False,
    samples: tuple[str, ...] = (),
    known: tuple[str, ...] = (),
) -> ColumnInfo:
    return ColumnInfo(name, data_type, nullable, comment, samples, known)


LIBRARY = Catalog(
    "library",
    (
        TableInfo(
            "public",
            "members",
            "Library members (patrons, readers) who borrow books.",
            columns=(
                _col("member_id"),
                _col("full_name", "text", "The member's name.", known=("Ada Byrne", "Tomas Ruiz")),
                _col("city", "text", samples=("Cork", "Galway")),
                _col("active", "boolean", "False when the member has moved away."),
            ),
            primary_key=("member_id",),
        ),
        TableInfo(
            "public",
            "books",
            "Books on the shelves.",
            columns=(
                _col("book_id"),
                _col("title", "text"),
                _col("genre", "text", samples=("Poetry", "Science Fiction")),
            ),
            primary_key=("book_id",),
        ),
        TableInfo(
            "public",
            "loans",
            "Book loans (checkouts, borrowings): one row per book lent.",
            columns=(
                _col("loan_id"),
                _col("member_id"),
                _col("book_id"),
                _col("loaned_on", "date", "Day the book was lent."),
                _col(
                    "returned_at",
                    "timestamp with time zone",
                    "When the book was returned; NULL while out.",
                    nullable=True,
                ),
                _col(
                    "status",
                    "text",
                    samples=("Lost", "Returned Late", "Returned On Time"),
                ),
                _col("fee", "numeric(8,2)", "Late fee (penalty) in euros."),
            ),
            primary_key=("loan_id",),
        ),
    ),
)


def _sql(question: str, catalog: Catalog = LIBRARY) -> str:
    linked = QuestionLinker(
        question, Vocabulary(catalog, JoinGraph(catalog)), TODAY, check=verify_statement
    ).link()
    sqlglot.parse_one(linked.sql, dialect="postgres")  # well-formed
    return " ".join(linked.sql.split())


def _bare(catalog: Catalog) -> Catalog:
    """The same schema with no comments, samples or value index: names only."""
    return replace(
        catalog,
        tables=tuple(
            replace(
                t,
                comment="",
                columns=tuple(
                    replace(c, comment="", sample_values=(), known_values=()) for c in t.columns
                ),
            )
            for t in catalog.tables
        ),
    )


def test_other_names_a_comment_gives_a_table_and_a_column() -> None:
    assert _sql("How many checkouts are there?") == (
        "SELECT COUNT(*) AS count FROM public.loans AS t0"
    )
    assert _sql("What is the total penalty?") == (
        "SELECT SUM(t0.fee) AS sum_fee FROM public.loans AS t0"
    )
    # without the comments the same words name nothing, and the question is refused
    with pytest.raises(LinkError, match="checkouts"):
        _sql("How many checkouts are there?", _bare(LIBRARY))


def test_states_a_comment_defines() -> None:
    assert _sql("How many members have moved?").endswith("WHERE (NOT t0.active)")
    assert _sql("How many loans have been returned?").endswith("WHERE (t0.returned_at IS NOT NULL)")
    assert _sql("How many loans are out?").endswith("WHERE (t0.returned_at IS NULL)")
    with pytest.raises(LinkError, match="moved"):
        _sql("How many members have moved?", _bare(LIBRARY))


def test_a_word_of_one_stored_value_names_it() -> None:
    assert _sql("How many loans were late?").endswith("WHERE (t0.status = 'Returned Late')")
    # "returned" is in two values (and a column's name): no guess
    with pytest.raises(LinkError):
        _sql("How many loans were returned on Tuesday?")


def test_proper_names_from_the_value_index_join_through_inferred_keys() -> None:
    sql = _sql("How many loans does Ada Byrne have?")
    assert "JOIN public.members AS t1 ON t1.member_id = t0.member_id" in sql
    assert sql.endswith("WHERE (t1.full_name = 'Ada Byrne')")
    with pytest.raises(LinkError, match="Ada"):
        _sql("How many loans does Ada Byrne have?", _bare(LIBRARY))


def test_the_most_of_a_child_table_and_sums_per_listed_row() -> None:
    most = _sql("Which member has the most loans?")
    group = most.split("GROUP BY ", 1)[1].split(" ORDER BY", 1)[0]
    assert "COUNT(*) AS count" in most and "t1.member_id" in group.split(", ")
    assert most.endswith("LIMIT 1")
    summed = _sql("Who are the top 3 members by fee?")
    assert "SUM(t0.fee) AS sum_fee" in summed and summed.endswith("LIMIT 3")


def test_result_columns_have_readable_distinct_names() -> None:
    sql = _sql("List the title and genre of books")
    assert sql == "SELECT t0.title AS title, t0.genre AS genre FROM public.books AS t0"


def test_a_name_the_index_has_not_seen_is_taken_as_said_after_named() -> None:
    # a member added since the catalog loaded: the question says it is a name
    sql = _sql("How many loans does the member named Nora Quinn have?")
    assert "JOIN public.members AS t1 ON t1.member_id = t0.member_id" in sql
    assert sql.endswith("WHERE (t1.full_name = 'Nora Quinn')")
    assert _sql("List the books called 'The Long Way'").endswith(
        "WHERE (t0.title = 'The Long Way')"
    )
    # without the cue an unknown name is refused, never guessed
    with pytest.raises(LinkError, match="Nora"):
        _sql("How many loans does Nora Quinn have?")
