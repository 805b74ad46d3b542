"""Postgres identifiers for sqlglot trees: quoted exactly when Postgres needs it."""

from __future__ import annotations

import re

from sqlglot import exp

_SIMPLE = re.compile(r"^[a-z_][a-z0-9_$]*$")

# Reserved (and type/function-name reserved) keywords of PostgreSQL: as bare
# identifiers they would not parse, so they are always quoted.
RESERVED = frozenset(
    [
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "authorization",
        "binary",
        "both",
        "case",
        "cast",
        "check",
        "collate",
        "collation",
        "column",
        "concurrently",
        "constraint",
        "create",
        "cross",
        "current_catalog",
        "current_date",
        "current_role",
        "current_schema",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "deferrable",
        "desc",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "false",
        "fetch",
        "for",
        "foreign",
        "freeze",
        "from",
        "full",
        "grant",
        "group",
        "having",
        "ilike",
        "in",
        "initially",
        "inner",
        "intersect",
        "into",
        "is",
        "isnull",
        "join",
        "lateral",
        "leading",
        "left",
        "like",
        "limit",
        "localtime",
        "localtimestamp",
        "natural",
        "not",
        "notnull",
        "null",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "outer",
        "overlaps",
        "placing",
        "primary",
        "references",
        "returning",
        "right",
        "select",
        "session_user",
        "similar",
        "some",
        "symmetric",
        "system_user",
        "table",
        "tablesample",
        "then",
        "to",
        "trailing",
        "true",
        "union",
        "unique",
        "user",
        "using",
        "variadic",
        "verbose",
        "when",
        "where",
        "window",
        "with",
    ]
)


def needs_quotes(name: str) -> bool:
    """Whether ``name`` must be double-quoted to reach exactly this identifier."""
    return not _SIMPLE.match(name) or name in RESERVED


def identifier(name: str) -> exp.Identifier:
    """``name`` as an identifier node that regenerates to the same Postgres name."""
    return exp.Identifier(this=name, quoted=needs_quotes(name))
