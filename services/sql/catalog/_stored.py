"""Stored values: which words of a question are values the database holds, and which
column holds them.

The catalog reads each text column's values where it can (the planner's common values of
low-cardinality columns, the full distinct set of varied-but-small ones): the linker
links a question's proper names with them. The answer memory and conversation follow-ups
read values the same way, so a code ("JFK"), a name with an apostrophe ("Anna's Diner")
or a multi-word name with small words ("International Journal of Robotics") is one value
whatever its case or shape, and a swapped value is checked against the column it
replaces (a status where a transaction type was is another question, not a swap).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import psycopg
import sqlglot
from psycopg import sql as psql
from sqlglot import exp

from services.sql.catalog._catalog import Catalog, TableInfo
from services.sql.words import GRAMMAR_WORDS, STOP_WORDS, name_words, stem

_MAX_VALUE_WORDS = 8


_WORD = re.compile(r"[\w'&.-]+")


def value_key(text: str) -> tuple[str, ...]:
    """A value compared as words: case, surrounding blanks, edge quotes and plural
    endings ignored ("Sells" is the stored "sell", " ABZ" is "abz")."""
    words = (w.strip("'.") for w in _WORD.findall(text.lower()))
    return tuple(stem(w) for w in words if w)


@dataclass(frozen=True)
class Holder:
    """A column holding a value, and the value as stored."""

    table: TableInfo
    column: str
    stored: str


@dataclass
class StoredValues:
    """Every value the catalog read, by its words (see :func:`value_key`)."""

    by_key: dict[tuple[str, ...], list[Holder]] = field(default_factory=dict)
    longest: int = 0
    _firsts: set[str] = field(default_factory=set)
    # the words of table and column names, stemmed: "Airline" in 'flights of Airline
    # "United Airlines"' names a table, it is no value
    names: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, catalog: Catalog) -> StoredValues:
        index = cls()
        for table in catalog.tables:
            index.names |= {stem(w) for w in name_words(table.name) if len(w) > 2}
            for column in table.columns:
                index.names |= {stem(w) for w in name_words(column.name) if len(w) > 2}
                for stored in {*column.sample_values, *column.known_values}:
                    key = value_key(stored)
                    if (
                        not key
                        or len(key) > _MAX_VALUE_WORDS
                        or not any(c.isalpha() for c in stored)
                    ):
                        continue  # fmt: skip
                    index.by_key.setdefault(key, []).append(Holder(table, column.name, stored))
                    index.longest = max(index.longest, len(key))
                    index._firsts.add(key[0])
        return index

    def holders(self, value: str) -> list[Holder]:
        """The columns that store ``value``."""
        return self.by_key.get(value_key(value), [])

    def spelling(self, table: TableInfo, column: str, value: str) -> str | None:
        """How ``table.column`` stores ``value`` (None when it does not store it)."""
        for holder in self.holders(value):
            if holder.table.qualified == table.qualified and holder.column == column:
                return holder.stored
        return None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of ``text`` that name a stored value, longest first and never
        overlapping: a value of several words wins over the words inside it. Each word is
        stemmed once and only spans opening with a value's first word are looked up (this
        runs on every question the memory reads)."""
        words = [m for m in _WORD.finditer(text) if m.group(0).strip("'.")]
        keys = [stem(m.group(0).strip("'.").lower()) for m in words]
        taken: list[tuple[int, int]] = []
        for size in range(min(self.longest, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                if keys[start] not in self._firsts:
                    continue
                holders = self.by_key.get(tuple(keys[start : start + size]))
                if not holders:
                    continue
                first, last = words[start], words[start + size - 1]
                begin = first.start() + (len(first.group(0)) - len(first.group(0).lstrip("'.")))
                end = last.start() + len(last.group(0).rstrip("'."))
                if any(b < end and begin < e for b, e in taken):
                    continue
                if any(_written_as(text[begin:end], h.stored) for h in holders):
                    taken.append((begin, end))
        return sorted(taken)


def _written_as(said: str, stored: str) -> bool:
    """Whether the words as said may name the stored value: a stored value that is also
    a function word ("US" / "us", "IN" / "in") must be written as stored."""
    core = stored.strip()
    if said.lower() in STOP_WORDS or said.lower() in GRAMMAR_WORDS:
        return said == core
    return True


def table_for(catalog: Catalog, table: exp.Table) -> TableInfo | None:
    """The catalog's table a statement names (exactly, else by case-insensitive name)."""
    info = catalog.resolve(table.db or None, table.name)
    if info is None:
        low = table.name.lower()
        info = next((t for t in catalog.tables if t.name.lower() == low), None)
    return info


@dataclass(frozen=True)
class Comparison:
    """A literal of a statement compared with a column: the column's possible tables (one
    when it is qualified), whether it is compared lower-cased, by equality."""

    literal: exp.Literal
    owners: tuple[TableInfo, ...]
    column: str
    folded: bool
    equality: bool


def comparisons(tree: exp.Expr, catalog: Catalog) -> list[Comparison]:
    """Every literal ``tree`` compares with a column (``status = 'failed'``,
    ``lower(city) LIKE '%x%'``, ``kind IN ('a', 'b')``, ``year > 2000``)."""
    tables: dict[str, TableInfo] = {}
    for table in tree.find_all(exp.Table):
        info = table_for(catalog, table)
        if info is not None:
            tables[table.alias_or_name.lower()] = info
            tables[table.name.lower()] = info
    distinct = {t.qualified: t for t in tables.values()}
    found: list[Comparison] = []
    for literal in tree.find_all(exp.Literal):
        compared = literal.parent
        if isinstance(compared, exp.Tuple):
            compared = compared.parent
        column = compared.this if compared is not None else None
        folded = False
        while isinstance(column, exp.Func) and not isinstance(column, exp.Column):
            # lower(status) = 'failed', trim(city) = 'Aberdeen'
            folded = folded or isinstance(column, exp.Lower)
            column = column.this
        if not isinstance(column, exp.Column):
            continue
        if column.table:
            owners = tuple(t for t in (tables.get(column.table.lower()),) if t is not None)
        else:
            owners = tuple(t for t in distinct.values() if t.column(column.name) is not None)
        if owners:
            equality = isinstance(compared, exp.EQ | exp.NEQ | exp.In)
            found.append(Comparison(literal, owners, column.name, folded, equality))
    return found


def compared_columns(
    sql: str, catalog: Catalog, *, equality_only: bool = True
) -> dict[str, list[tuple[TableInfo, str]]]:
    """The column a statement compares each literal with (by the literal's lower-cased
    text): string literals compared for equality, or with ``equality_only=False`` every
    literal (numbers, patterns, ranges)."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return {}
    found: dict[str, list[tuple[TableInfo, str]]] = {}
    for item in comparisons(tree, catalog):
        if equality_only and not (item.literal.is_string and item.equality):
            continue
        found.setdefault(item.literal.this.lower(), []).append((item.owners[0], item.column))
    return found


def stored_spelling(table: TableInfo, column: str, value: str) -> str | None:
    """How ``table.column`` stores ``value`` by the values the catalog read (its samples
    and index), or None when they do not hold it."""
    info = table.column(column)
    if info is None:
        return None
    wanted = value_key(value)
    return next(
        (v for v in (*info.sample_values, *info.known_values) if value_key(v) == wanted), None
    )


async def stored_in(conn: psycopg.AsyncConnection[Any], table: TableInfo, column: str,
                    value: str) -> bool:  # fmt: skip
    """Whether ``table.column`` stores ``value`` (case and surrounding blanks ignored): a
    read-only existence probe, one row at most. A table a principal reads under a row
    filter is never probed (the probe would see other people's rows): True, no evidence
    either way, and the statement's own filtered run decides."""
    if table.row_filtered:
        return True
    statement = psql.SQL(
        "SELECT 1 FROM {tbl} WHERE lower(trim({col}::text)) = lower(trim(%s)) LIMIT 1"
    ).format(tbl=psql.Identifier(table.schema, table.name), col=psql.Identifier(column))
    row = await (await conn.execute(statement, (value,))).fetchone()
    return row is not None
