"""The earlier statement as a follow-up reads it: one SELECT parsed with sqlglot, the
tables it reads itself, and its tables' names as words."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo
from services.sql.words import common_prefix, name_words


class FollowUpError(Exception):
    """The earlier statement cannot carry this follow-up; the message says why."""


def parse(sql: str) -> exp.Select:
    """The statement as one SELECT, or FollowUpError."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError as exc:
        raise FollowUpError("the earlier statement does not parse") from exc
    if not isinstance(tree, exp.Select):
        raise FollowUpError("the earlier statement is not a single SELECT")
    return tree


def sources(select: exp.Select) -> list[exp.Table]:
    """The tables a SELECT reads itself (its FROM and joins, not its sub-queries')."""
    clauses = [select.args.get("from_"), *(select.args.get("joins") or ())]
    return [c.this for c in clauses if c is not None and isinstance(c.this, exp.Table)]


def readable(table: TableInfo, catalog: Catalog) -> str:
    """A table's name as words, without the prefix every table of the database shares
    ("sbCustomer" among sbTransaction, sbTicker … → "customer")."""
    prefix = common_prefix([t.name for t in catalog.tables])
    name = table.name[len(prefix) :] if prefix and len(table.name) > len(prefix) else table.name
    return " ".join(name_words(name)) or table.name
