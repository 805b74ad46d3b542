"""What the clause reader reads into: the question's tokens and mentions being read
(:class:`Reading`), and the items, conditions, ranks and counts found (:class:`Read`),
before the tables decide what the column phrases mean.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._mentions import (
    Chart,
    Mention,
    Token,
)
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._cues import NUMBER_WORDS


class Decline(Exception):
    """The reader cannot place every phrase of the question; another reading may."""


@dataclass
class Item:
    """One thing the answer shows: a column phrase (resolved once the tables are known),
    an aggregate of one, a count of a table's rows, or a table itself ("which singers")."""

    func: str  # "", "AVG", "MAX", "MIN", "SUM", "COUNT", "COUNT_DISTINCT"
    start: int
    end: int
    mentions: list[Mention] = field(default_factory=list)
    table: TableInfo | None = None  # a count of rows, or the table listed
    label: bool = False  # "names", "ids": the label of the entity or of a named table


@dataclass
class Condition:
    """A condition read from the question, its column resolved later when a phrase
    names one: ``op`` is a SQL operator, ``value`` a literal already rendered."""

    start: int
    end: int
    mentions: list[Mention]
    op: str
    value: str
    dimension: str = ""  # a comparative's dimension ("age") to find among columns
    col: Col | None = None


@dataclass
class Rank:
    """A superlative: order by a column (or by a count of a table's rows) and keep the
    first ``limit`` rows (every row where ``limit`` is 0: "oldest first" orders only)."""

    start: int
    mentions: list[Mention]
    descending: bool
    limit: int = 1
    dimension: str = ""
    count_of: TableInfo | None = None
    by_count: bool = False  # "the most common X": rows per X
    amount: bool = False  # "the most shares": how much of a quantity, not its highest value
    # "the document with the most paragraphs": the table whose rows the superlative
    # ranks, named just before it (None where no table is named there)
    ranked: TableInfo | None = None


@dataclass
class Counted:
    """A count of related rows compared with a number ("at least 2 courses")."""

    table: TableInfo
    op: str
    number: int


@dataclass
class Read:
    """Everything read, before the tables decide what the column phrases mean."""

    kind: str
    items: list[Item] = field(default_factory=list)
    entity: TableInfo | None = None
    tables: list[TableInfo] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=list)
    ranks: list[Rank] = field(default_factory=list)
    counted: list[Counted] = field(default_factory=list)
    # tables the rows must have no related row in, with the conditions on that row
    anti: list[tuple[TableInfo, list[Condition]]] = field(default_factory=list)
    semi: list[TableInfo] = field(default_factory=list)
    groups: list[list[Mention]] = field(default_factory=list)
    order: list[tuple[list[Mention], bool]] = field(default_factory=list)
    order_items: bool | None = None  # "in descending order": by the first item
    limit: int = 0
    head_limit: bool = False  # the limit was "which 3 …": it needs a ranking to cut
    distinct: bool = False
    ors: list[list[Condition]] = field(default_factory=list)
    when: bool = False  # "When did …": the event's date is still to be read

    def mention_table(self, table: TableInfo) -> None:
        if table not in self.tables:
            self.tables.append(table)


@dataclass
class Reading:
    """The question being read: its tokens, mentions, and what has been used."""

    ctx: LinkContext
    chart: Chart
    used: set[int] = field(default_factory=set)

    @property
    def tokens(self) -> list[Token]:
        return self.chart.tokens

    @property
    def size(self) -> int:
        return len(self.chart.tokens)

    def low(self, i: int) -> str:
        return self.tokens[i].low if 0 <= i < self.size else ""

    def words(self, i: int, n: int) -> str:
        return " ".join(t.low for t in self.tokens[i : i + n])

    def use(self, start: int, end: int) -> None:
        self.used.update(range(start, end))

    def match(self, i: int, phrases: Sequence[str]) -> str:
        """The longest of ``phrases`` the tokens spell from ``i`` (or empty)."""
        if not 0 <= i < self.size:
            return ""
        for phrase, n in _by_first_word(tuple(phrases)).get(self.tokens[i].low, ()):
            if self.words(i, n) == phrase:
                return phrase
        return ""

    def skip(self, i: int, words: frozenset[str] = frozenset({"the", "a", "an", "all"})) -> int:
        while i < self.size and self.low(i) in words:
            i += 1
        return i

    def longest(self, i: int, kinds: Sequence[str]) -> list[Mention]:
        """The mentions of the longest span of one of ``kinds`` starting at ``i``, best
        scores first."""
        found = [m for m in self.chart.starting(i) if m.kind in kinds]
        if not found:
            return []
        size = max(m.size for m in found)
        return sorted((m for m in found if m.size == size), key=lambda m: -m.score)

    def number(self, i: int) -> float | None:
        tok = self.tokens[i] if 0 <= i < self.size else None
        if tok is None:
            return None
        if tok.number is not None:
            return tok.number
        return float(NUMBER_WORDS[tok.low]) if tok.low in NUMBER_WORDS else None


@functools.lru_cache(maxsize=128)
def _by_first_word(phrases: tuple[str, ...]) -> dict[str, list[tuple[str, int]]]:
    """The phrases by their first word, longest first (a constant table, read once)."""
    index: dict[str, list[tuple[str, int]]] = {}
    for phrase in sorted(phrases, key=lambda p: -len(p.split())):
        index.setdefault(phrase.split()[0], []).append((phrase, len(phrase.split())))
    return index


def table_first(tables: list[Mention], columns: list[Mention]) -> bool:
    """A phrase naming a table at least as long and as surely as any column: the table."""
    return tables[0].size > columns[0].size or (
        tables[0].size == columns[0].size and tables[0].score >= columns[0].score
    )


def is_year(reading: Reading, i: int) -> bool:
    number = reading.tokens[i].number if i < reading.size else None
    return number is not None and 1800 <= number <= 2100 and number == int(number)
