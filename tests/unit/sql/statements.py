"""Statements compared as Postgres reads them, not as text: a follow-up's rewrite and the
statement a test expects may differ in spacing, parentheses or quoting and still be one
query."""

from __future__ import annotations

import sqlglot


def assert_same_sql(left: str, right: str) -> None:
    """``left`` and ``right`` parse to the same tree (``left`` shown when they do not)."""
    assert sqlglot.parse_one(left, dialect="postgres") == sqlglot.parse_one(
        right, dialect="postgres"
    ), left
