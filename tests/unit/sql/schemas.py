"""Building blocks for the linker tests' invented schemas: a column with its sampled values,
and a question linked and checked on a catalog as the service does (its vocabulary and join
graph built from the catalog alone, no meanings)."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph
from services.sql.linker import QuestionLinker, Vocabulary
from services.sql.verify import verify_statement


def col(name: str, data_type: str = "integer", samples: tuple[str, ...] = ()) -> ColumnInfo:
    """A nullable column; ``samples`` are the stored values the catalog read."""
    return ColumnInfo(name, data_type, True, sample_values=samples)


def key(name: str) -> ColumnInfo:
    """A key column: a whole number, never null."""
    return ColumnInfo(name, "integer", False)


def linked_sql(question: str, catalog: Catalog, today: date) -> str:
    """The SQL the linker answers ``question`` with, checked by the verifier and parsed as
    Postgres, on one line (a refusal raises ``LinkError``): what tests compare to the
    letter, whatever the composer's line breaks."""
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, today, check=verify_statement).link()
    sqlglot.parse_one(linked.sql, dialect="postgres")
    return " ".join(linked.sql.split())


def linked_statement(question: str, catalog: Catalog, today: date) -> exp.Select:
    """The statement the linker answers ``question`` with, checked by the verifier
    (a refusal raises ``LinkError``)."""
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, today, check=verify_statement).link()
    tree = sqlglot.parse_one(linked.sql, dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree
