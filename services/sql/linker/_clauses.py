"""Reading a question's clauses: what it asks for, of which rows, under which conditions,
grouped, ordered and cut how; into the same :class:`Plan` the rest of the linker
composes.

A question is read left to right over its mentions (``_mentions``):

1. **the head** says what kind of answer is asked: a count ("how many", "the number
   of"), a list or a lookup ("what are", "show", "which");
2. **the items**: the columns, aggregates and counts the answer shows, up to the first
   word that starts a clause ("of", "for", "whose", "with", "in", ...);
3. **the clauses** after them, each recognised by its first words: the entity ("of
   singers", "for each stadium"), stored values ("from France", "named Kyle"),
   comparisons with numbers ("older than 30", "with capacity above 5000", "between 3 and
   5"), "above the average X", superlatives ("the youngest", "with the most concerts"),
   counts of related rows ("with at least 2 courses"), their absence ("that have no
   pets"), grouping ("for each country"), ordering ("in descending order of age") and
   limits ("the top 3");
4. the tables the phrases name decide which column each ambiguous phrase means: a
   column of the entity first, then of another table the question names.

Every token must be used by the head, an item or a clause, or be a word of a question's
grammar; otherwise the reader declines and the older, list-oriented reading is tried.
What the reader cannot place exactly it never guesses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.sql._catalog import TableInfo
from services.sql._joins import JoinGraph
from services.sql._words import lemma, word_match
from services.sql.linker._context import LinkContext, Meaning
from services.sql.linker._dates import DATE_NAME_WORDS
from services.sql.linker._lookup import refers_to_rows
from services.sql.linker._mentions import (
    Chart,
    Mention,
    Token,
    chart,
    could_mention,
    question_tokens,
)
from services.sql.linker._naming import condition_words
from services.sql.linker._plan import (
    Dim,
    Measure,
    Plan,
    is_key,
    is_number,
    is_temporal,
    lit,
    name_columns,
    person_name,
    quote,
    table_sql,
)
from services.sql.linker._vocabulary import Col, Vocabulary, column_states


class Decline(Exception):
    """The reader cannot place every phrase of the question; another reading may."""


_AGGREGATES = {
    "average": "AVG",
    "avg": "AVG",
    "mean": "AVG",
    "maximum": "MAX",
    "max": "MAX",
    "highest": "MAX",
    "largest": "MAX",
    "biggest": "MAX",
    "greatest": "MAX",
    "minimum": "MIN",
    "min": "MIN",
    "lowest": "MIN",
    "smallest": "MIN",
    "total": "SUM",
    "sum": "SUM",
}
_COMPARE = {
    "more than": ">",
    "greater than": ">",
    "larger than": ">",
    "bigger than": ">",
    "higher than": ">",
    "above": ">",
    "over": ">",
    "exceeding": ">",
    "after": ">",
    "later than": ">",
    "less than": "<",
    "fewer than": "<",
    "smaller than": "<",
    "lower than": "<",
    "below": "<",
    "under": "<",
    "before": "<",
    "earlier than": "<",
    "at least": ">=",
    "no less than": ">=",
    "not less than": ">=",
    "at most": "<=",
    "no more than": "<=",
    "not more than": "<=",
    "equal to": "=",
    "exactly": "=",
}
# "4 or more high schoolers": the bound after the number
_TRAILING_COMPARE = {"or more": ">=", "or greater": ">=", "or less": "<=", "or fewer": "<="}
# Comparative adjectives and the dimension they compare, found among column names.
_DIMENSIONS = {
    "older": ("age", ">"),
    "younger": ("age", "<"),
    "heavier": ("weight", ">"),
    "lighter": ("weight", "<"),
    "taller": ("height", ">"),
    "shorter": ("height", "<"),
    "longer": ("length", ">"),
    "cheaper": ("price", "<"),
}
# Superlative adjectives: the dimension they rank and whether the highest value wins.
_RANKED = {
    "oldest": ("age", True),
    "youngest": ("age", False),
    "heaviest": ("weight", True),
    "lightest": ("weight", False),
    "tallest": ("height", True),
    "shortest": ("height", False),
    "longest": ("length", True),
    "cheapest": ("price", False),
}
# Superlatives that rank by the phrase after them ("the highest capacity", "the most
# concerts"): whether the highest value wins.
_MOST = {
    "most": True,
    "highest": True,
    "largest": True,
    "biggest": True,
    "greatest": True,
    "maximum": True,
    "max": True,
    "least": False,
    "fewest": False,
    "lowest": False,
    "smallest": False,
    "minimum": False,
    "min": False,
}
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_NUMBER_WORDS["single"] = 1
# Words of a question's grammar: they name nothing and change no answer here.
_GRAMMAR = frozenset(
    """
    a an the of in on at for to by with and is are was were be been being do does did
    have has had there their them they it its this that these those what which who whom
    whose how all any as also both only just respectively respective corresponding
    correspond corresponds whole entire please me us each every ever we you some
    but where exist exists listed list total there
    """.split()
)
# Verbs that say how rows relate ("cars produced by", "templates used in"): the joins
# already say it. Verbs that ask for a test of their own ("contain", "start", "end",
# "exceed") are not among them, nor any stored value (read before this applies).
_RELATION_VERBS = frozenset(
    """
    produce produces make makes made use uses own owns play plays go goes depart departs
    arrive arrives come comes belong belongs teach teaches hold holds host hosts visit
    visits sell sells buy buys work works live lives get gets got give gives gave take
    takes took run runs ran hire hires write writes wrote publish publishes perform
    performs happen happens occur occurs attend attends design designs create creates
    receive receives raise raises keep keeps kept serve serves offer offers provide
    provides include includes list lists exist exists appear appears register registers
    used owned using owning held sold went become becomes became
    """.split()
)


def unplaced_words(
    vocab: Vocabulary, tokens: Sequence[Token], meanings: Sequence[Meaning] = ()
) -> list[Token]:
    """The words of ``tokens`` no mention could cover and no clause could use: what no
    reading by names will place (a cheap test, before any mention is looked up)."""
    return [
        t
        for k, t in enumerate(tokens)
        if needs_a_name(vocab, t)
        and not could_mention(vocab, t, meanings)
        and not _person_name_part(tokens, k)
    ]


def _person_name_part(tokens: Sequence[Token], k: int) -> bool:
    """ "last" of "last name": no name by itself, it is read with "name" as the column
    a schema shortens the pair to (``lname``)."""
    return (
        tokens[k].low in ("first", "last", "family")
        and k + 1 < len(tokens)
        and tokens[k + 1].low in ("name", "names")
    )


def needs_a_name(vocab: Vocabulary, token: Token) -> bool:
    """Whether only a mention can place the word: no cue, no grammar, no relating verb,
    no number or quoted value."""
    return not (
        token.quoted
        or token.number is not None
        or token.low in _cue_words()
        or _glue_word(vocab, token)
    )


def _glue(ctx: LinkContext, token: Token) -> bool:
    """A word of the grammar, or a verb that only relates rows; a verb form of a stored
    value ("failed" transactions, status 'fail') states a condition, it is no glue."""
    if token.low not in _GRAMMAR and _stored_state(ctx.vocab, token):
        return False
    return _glue_word(ctx.vocab, token)


def _stored_state(vocab: Vocabulary, token: Token) -> bool:
    """The word, as said or without its inflection ("failed", "cancelled", "dogs"), is a
    value some column stores."""
    low = token.low
    forms = {low, lemma(low), low[:-2] if low.endswith("ed") else "", low[:-1]}
    return any(form in vocab.values for form in forms if len(form) > 2)


def _glue_word(vocab: Vocabulary, token: Token) -> bool:
    return token.low in _GRAMMAR or (_relation_verb(token) and not _names_a_column(vocab, token))


@functools.cache
def _cue_words() -> frozenset[str]:
    """Every word a head, an item or a clause reads as a cue of its own."""
    phrases = [
        *_COUNT_HEADS, *_LIST_HEADS, *_AGGREGATES, *_COMPARE, *_TRAILING_COMPARE,
        *_DIMENSIONS, *_RANKED, *_MOST, *_ORDER_PHRASES, *_DIRECTIONS, *_GROUP_PHRASES,
        *_OR_BOUND, *_NEGATIONS, *_PREPOSITIONS, *_NUMBER_WORDS, *_BOUNDARY,
        "named called titled between average mean common frequent popular top first number",
        "numbers count counts distinct different unique or either as well along together",
        "name names id ids title titles have has had own owns who that which any a an",
        "across",
    ]  # fmt: skip
    return frozenset(w for phrase in phrases for w in phrase.split())


def form_words() -> frozenset[str]:
    """The words of a question's form: its head ("give", "list", "show"), the cues of
    items and clauses (aggregates, comparisons, ranks, order) and its grammar. They name
    no table, column or relation, so two questions that differ only in such words and in
    names ask alike (the answer memory's test of a reworded question)."""
    return _cue_words() | _GRAMMAR


def _names_a_column(vocab: Vocabulary, token: Token) -> bool:
    """A verb that names a column ("returned" for ``returned_at``) or a state a column's
    comment defines ("archived": "when the account was archived") states a condition,
    it relates nothing."""
    key = ("names a column", token.low)
    known = vocab.word_memo.get(key)
    if isinstance(known, bool):
        return known
    found = _states_a_column(vocab, token)
    vocab.remember(key, found)
    return found


def _states_a_column(vocab: Vocabulary, token: Token) -> bool:
    if any(
        word_match(token.stem, part) >= 0.9
        for col in vocab.columns
        for part in vocab.column_words[col.key]
        if len(part) >= 4
    ):
        return True
    return any(
        token.low in words or token.stem in words
        for col in vocab.columns
        for words, _ in column_states(col.column)
    )


def _relation_verb(token: Token) -> bool:
    low = token.low
    if low in _RELATION_VERBS:
        return True
    return (
        len(low) >= 6
        and low.endswith(("ed", "ing"))
        and not low.startswith(("contain", "start", "begin", "end", "exceed", "exclud", "includ"))
    )


# Words that end the list of items and start a clause.
_BOUNDARY = frozenset(
    """
    of for in from with whose who that which where by having has have than when on at
    ordered sorted order sort ranked there are is was were do does did among between
    who whom whose named called
    """.split()
)
_ORDER_WORDS = {"ascending": False, "asc": False, "descending": True, "desc": True}
_NEGATIONS = frozenset({"not", "no", "never", "without", "none"})
# Prepositions that may introduce a value ("from France", "in 2014", "of type CV").
_PREPOSITIONS = frozenset({"from", "in", "of", "at", "with", "for", "by", "on", "to", "during"})
# "in 2014 or after": the bound the value opens
_OR_BOUND = {"or after": ">=", "or later": ">=", "or before": "<=", "or earlier": "<=",
             "or more": ">=", "or above": ">=", "or less": "<=", "or below": "<="}  # fmt: skip
# Words that start a new clause: a negated phrase ends before them.
_CLAUSE_START = frozenset(
    {"who", "whose", "that", "which", "and", "or", "but", "ordered", "sorted", "order", "sort"}
)


@dataclass
class _Item:
    """One thing the answer shows: a column phrase (resolved once the tables are known),
    an aggregate of one, a count of a table's rows, or a table itself ("which singers")."""

    func: str  # "", "AVG", "MAX", "MIN", "SUM", "COUNT", "COUNT_DISTINCT"
    start: int
    end: int
    mentions: list[Mention] = field(default_factory=list)
    table: TableInfo | None = None  # a count of rows, or the table listed
    label: bool = False  # "names", "ids": the label of the entity or of a named table


@dataclass
class _Condition:
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
class _Rank:
    """A superlative: order by a column (or by a count of a table's rows) and keep the
    first ``limit`` rows."""

    start: int
    mentions: list[Mention]
    descending: bool
    limit: int = 1
    dimension: str = ""
    count_of: TableInfo | None = None
    by_count: bool = False  # "the most common X": rows per X


@dataclass
class _Counted:
    """A count of related rows compared with a number ("at least 2 courses")."""

    table: TableInfo
    op: str
    number: int


@dataclass
class _Read:
    """Everything read, before the tables decide what the column phrases mean."""

    kind: str
    items: list[_Item] = field(default_factory=list)
    entity: TableInfo | None = None
    tables: list[TableInfo] = field(default_factory=list)
    conditions: list[_Condition] = field(default_factory=list)
    ranks: list[_Rank] = field(default_factory=list)
    counted: list[_Counted] = field(default_factory=list)
    # tables the rows must have no related row in, with the conditions on that row
    anti: list[tuple[TableInfo, list[_Condition]]] = field(default_factory=list)
    semi: list[TableInfo] = field(default_factory=list)
    groups: list[list[Mention]] = field(default_factory=list)
    order: list[tuple[list[Mention], bool]] = field(default_factory=list)
    order_items: bool | None = None  # "in descending order": by the first item
    limit: int = 0
    head_limit: bool = False  # the limit was "which 3 …": it needs a ranking to cut
    distinct: bool = False
    ors: list[list[_Condition]] = field(default_factory=list)
    when: bool = False  # "When did …": the event's date is still to be read

    def mention_table(self, table: TableInfo) -> None:
        if table not in self.tables:
            self.tables.append(table)


@dataclass
class _Reading:
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
        return float(_NUMBER_WORDS[tok.low]) if tok.low in _NUMBER_WORDS else None


@functools.lru_cache(maxsize=128)
def _by_first_word(phrases: tuple[str, ...]) -> dict[str, list[tuple[str, int]]]:
    """The phrases by their first word, longest first (a constant table, read once)."""
    index: dict[str, list[tuple[str, int]]] = {}
    for phrase in sorted(phrases, key=lambda p: -len(p.split())):
        index.setdefault(phrase.split()[0], []).append((phrase, len(phrase.split())))
    return index


# --- the head -------------------------------------------------------------------------

_COUNT_HEADS = (
    "how many",
    "count the number of",
    "count the total number of",
    "count number of",
    "count the",
    "count",
    "what is the number of",
    "what is the total number of",
    "what are the number of",
    "what is the count of",
    "what's the number of",
    "find the number of",
    "find the total number of",
    "find number of",
    "show the number of",
    "return the number of",
    "return the total number of",
    "give the number of",
    "give me the number of",
    "tell me the number of",
    "list the number of",
    "the number of",
    "number of",
)
_LIST_HEADS = (
    "what are the",
    "what are",
    "what is the",
    "what is",
    "what was the",
    "what were the",
    "what's the",
    "which are the",
    "which is the",
    "who are the",
    "who is the",
    "show me the",
    "show me all the",
    "show me all",
    "show me",
    "show the",
    "show all the",
    "show all",
    "show",
    "list the",
    "list all the",
    "list all",
    "list",
    "find the",
    "find all the",
    "find all",
    "find",
    "give me the",
    "give me all the",
    "give the",
    "give me",
    "give",
    "return the",
    "return all the",
    "return all",
    "return",
    "display the",
    "display all",
    "display",
    "tell me the",
    "tell me",
    "get the",
    "get all",
    "please show the",
    "please show",
    "please list the",
    "please give me the",
)


def _head(reading: _Reading) -> tuple[str, int]:
    """The kind of answer ("count", "list", "which", "when") and where the items start;
    a conversation's "and …", "so …" before it changes nothing."""
    at = 1 if reading.low(0) in ("and", "so", "but", "now") and reading.size > 1 else 0
    count = reading.match(at, _COUNT_HEADS)
    if count:
        reading.use(0, at + len(count.split()))
        return "count", at + len(count.split())
    head = reading.match(at, _LIST_HEADS)
    if head:
        reading.use(0, at + len(head.split()))
        return "list", at + len(head.split())
    if reading.low(at) == "which" and reading.low(at + 1) == "of":
        # "Which of the countries has …": which countries
        start = reading.skip(at + 2, frozenset({"the", "these", "those", "all"}))
        reading.use(0, start)
        return "which", start
    if reading.low(at) in ("which", "what"):
        reading.use(0, at + 1)
        return "which", at + 1
    if reading.low(at) == "when" and reading.low(at + 1) in _WHEN_AUXILIARIES:
        # "When did the customers join?": the dates of the event the question's verb
        # names (``_when_event``); the verifier refuses a reading that returns no date
        reading.use(0, at + 2)
        return "when", at + 2
    raise Decline("the question's form is not one the reader knows")


# --- the items ------------------------------------------------------------------------


# After "show the <table>": words that begin a condition, so the table is what is listed
# ("give the airline with abbreviation 'UAL'"), not whose column follows ("singer names").
_ROWS_END = frozenset({"with", "whose", "that", "which", "who", "where"})


def _items(reading: _Reading, read: _Read, at: int) -> int:
    """The items up to the first clause word; returns where the clauses start."""
    pending: list[str] = []  # aggregates waiting for their column ("average and maximum")
    i = at
    while i < reading.size:
        low = reading.low(i)
        if low in (",", "and", "as", "well", "along", "together", "their", "its", "the", "all"):
            if reading.match(i, ("as well as", "along with", "together with")):
                n = len(reading.match(i, ("as well as", "along with", "together with")).split())
                reading.use(i, i + n)
                i += n
                continue
            if low in ("and", "the", "all", "their", "its"):
                reading.use(i, i + 1)
                i += 1
                continue
            break
        if low in ("distinct", "different", "unique"):
            read.distinct = True
            reading.use(i, i + 1)
            i += 1
            continue
        if low in _AGGREGATES and not (low in ("highest", "lowest", "largest", "smallest")
                                       and read.kind == "which"):  # fmt: skip
            pending.append(_AGGREGATES[low])
            reading.use(i, i + 1)
            i = reading.skip(i + 1, frozenset({"of", "the"}))
            continue
        counted = reading.match(i, ("number of", "count of", "numbers of", "counts of"))
        if counted:
            n = len(counted.split())
            reading.use(i, i + n)
            i = reading.skip(i + n, frozenset({"the", "distinct", "different", "unique"}))
            tables = reading.longest(i, ("table",))
            if tables:
                read.items.append(_Item("COUNT", i, tables[0].end, table=tables[0].table))
                reading.use(i, tables[0].end)
                i = tables[0].end
                continue
            columns = reading.longest(i, ("column",))
            if columns:
                read.items.append(_Item("COUNT_DISTINCT", i, columns[0].end, columns))
                reading.use(i, columns[0].end)
                i = columns[0].end
                continue
            raise Decline("a count of something the schema does not name")
        if low in _BOUNDARY:
            break
        columns = reading.longest(i, ("column",))
        tables = reading.longest(i, ("table",))
        kind = _counted_kind(reading, read, i) if not (tables or columns or pending) else None
        if kind is not None:
            i = kind
            continue
        if tables and not pending and (not columns or _table_first(tables, columns)):
            table = tables[0].table
            assert table is not None
            if pending:
                raise Decline("an aggregate of a table")
            after = [
                m for m in reading.longest(tables[0].end, ("column",))
                if m.col is not None and m.col.table is table
            ]  # fmt: skip
            if read.kind == "count" and not read.items and after:
                # "how many store locations": the distinct values of the table's column
                read.items.append(_Item("COUNT_DISTINCT", tables[0].end, after[0].end, after))
                read.mention_table(table)
                reading.use(i, after[0].end)
                i = after[0].end
                continue
            if read.kind == "count" and not read.items:
                read.items.append(_Item("COUNT", i, tables[0].end, table=table))
            elif not read.items and (
                read.kind == "which"
                or (
                    read.kind == "list"
                    and not read.when
                    and reading.low(tables[0].end) in _ROWS_END
                )
            ):
                # "which airlines …", "give the airline with …": the rows, by their label
                read.items.append(_Item("", i, tables[0].end, table=table))
            else:
                # "singer names": the table says whose column follows
                read.mention_table(table)
                if read.entity is None and read.kind != "list":
                    read.entity = table
            reading.use(i, tables[0].end)
            i = tables[0].end
            if read.entity is None and read.kind in ("count", "which"):
                read.entity = table
            continue
        if columns:
            funcs = pending or [""]
            for func in funcs:
                read.items.append(_Item(func, i, columns[0].end, columns))
            pending = []
            reading.use(i, columns[0].end)
            i = columns[0].end
            continue
        if low in ("name", "names", "id", "ids", "title", "titles"):
            read.items.append(_Item(pending[0] if pending else "", i, i + 1, label=True))
            pending = []
            reading.use(i, i + 1)
            i += 1
            continue
        break
    if pending:
        raise Decline("an aggregate names no column")
    return i


def _counted_kind(reading: _Reading, read: _Read, i: int) -> int | None:
    """ "How many dogs are owned by students": the counted noun is a stored value (a
    pet's type), so the rows counted are its table's where the column holds it; where
    that noun ends, or None when it is no such value (or values of several tables)."""
    values = [m for m in reading.longest(i, ("value",)) if m.col is not None]
    if read.kind != "count" or read.items or not values:
        return None
    if len({m.col.table.qualified for m in values if m.col is not None}) != 1:
        return None
    table = values[0].col.table  # type: ignore[union-attr]
    end = values[0].end
    read.items.append(_Item("COUNT", i, end, table=table))
    read.conditions.append(_Condition(i, end, values, "=", ""))
    read.mention_table(table)
    read.entity = read.entity or table
    reading.use(i, end)
    return end


def read_clauses(ctx: LinkContext) -> Plan:
    """The question's plan, or :class:`Decline` when a phrase cannot be placed."""
    tokens = question_tokens(ctx.question)
    if not tokens:
        raise Decline("empty question")
    kind, at = _head(_Reading(ctx, Chart(tokens)))  # the form first: it needs no mentions
    unplaced = unplaced_words(ctx.vocab, tokens[at:], ctx.meanings)
    if unplaced:  # a word nothing could place: decline before any lookup
        raise Decline(f"nothing read {unplaced[0].text!r}")
    reading = _Reading(ctx, chart(ctx.vocab, ctx.question, ctx.meanings))
    reading.use(0, at)
    # a word no mention covers and no clause could use: decline before reading on
    for i, t in enumerate(reading.tokens[at:], at):
        if t.quoted or t.number is not None or t.low in _cue_words() or _glue(ctx, t):
            continue
        if not reading.chart.covering(i) and _event_column(reading, i) is None:
            raise Decline(f"nothing read {t.text!r}")
    read = _Read("list", when=True) if kind == "when" else _Read(kind)
    at = _counted_head(reading, read, at)
    at = _items(reading, read, at)
    _clauses(reading, read, at)
    glue = [t for i, t in enumerate(reading.tokens) if i not in reading.used and _glue(ctx, t)]
    unused = [
        t.text for i, t in enumerate(reading.tokens) if i not in reading.used and t not in glue
    ]
    if unused:
        raise Decline(f"nothing read {unused[0]!r}")
    # the grammar and the relating verbs read as such: no condition hides in them; the
    # words read by meaning are explained by the names they were linked to
    ctx.known.update(w for t in glue for w in (t.low, t.stem))
    ctx.known.update(m.word for m in ctx.meanings)
    # a number written as a word and read as one ("at least two courses") names nothing;
    # the verifier checks the statement uses its value
    ctx.known.update(
        t.low for i, t in enumerate(reading.tokens) if i in reading.used and t.low in _NUMBER_WORDS
    )
    return _plan(reading, read)


def _counted_head(reading: _Reading, read: _Read, at: int) -> int:
    """ "Which 3 countries have the most makers?": a whole number right after "which" or
    "what" is how many of the ranked rows to give (the limit); read only where a ranking
    follows (checked when the plan is made), since "which 2 students" alone orders
    nothing."""
    number = reading.number(at)
    if read.kind != "which" or number is None or number != int(number) or number < 1:
        return at
    if reading.number(at + 1) is not None or reading.low(at + 1) in ("", "or", "and", "of"):
        return at
    read.limit = int(number)
    read.head_limit = True
    reading.use(at, at + 1)
    return at + 1


# --- the clauses ----------------------------------------------------------------------

_ORDER_PHRASES = {
    "in descending order of": True,
    "in descending order by": True,
    "in ascending order of": False,
    "in ascending order by": False,
    "in descending order": True,
    "in ascending order": False,
    "in alphabetical order of": False,
    "in alphabetical order by": False,
    "in alphabetical order": False,
    "in ascending alphabetical order of": False,
    "in ascending alphabetical order": False,
    "in descending alphabetical order": True,
    "alphabetically": False,
    "ordered by": False,
    "sorted by": False,
    "order by": False,
    "sort by": False,
    "ranked by": False,
    "ordered descending by": True,
    "ordered ascending by": False,
    "sorted descending by": True,
    "sorted ascending by": False,
    "in order of": False,
    "by descending order of": True,
    "by ascending order of": False,
    "in the descending order of": True,
    "in the ascending order of": False,
}
_DIRECTIONS = {
    "in descending order": True,
    "in ascending order": False,
    "descending": True,
    "ascending": False,
    "desc": True,
    "asc": False,
    "from highest to lowest": True,
    "from lowest to highest": False,
    "from high to low": True,
    "from low to high": False,
    "from the highest to the lowest": True,
    "from the lowest to the highest": False,
    "from largest to smallest": True,
    "from smallest to largest": False,
    "from the oldest to the youngest": True,
    "from oldest to youngest": True,
    "from the youngest to the oldest": False,
    "from youngest to oldest": False,
    "in descending": True,
    "in ascending": False,
}
_GROUP_PHRASES = (
    "for each",
    "in each",
    "of each",
    "per",
    "for every",
    "by each",
    "grouped by",
    "group by",
    "each",
)
_VERB_HAVE = ("have", "has", "had", "own", "owns", "owned", "with")


def _clauses(reading: _Reading, read: _Read, at: int) -> None:
    recognisers = (
        _when_event,
        _later_count,
        _scope_clause,
        _event_clause,
        _order_clause,
        _group_clause,
        _top_clause,
        _rank_clause,
        _absent_clause,
        _compare_clause,
        _value_clause,
        _present_clause,
        _table_clause,
    )
    i = at
    while i < reading.size:
        for recognise in recognisers:
            after = recognise(reading, read, i)
            if after is not None:
                i = after
                break
        else:
            i += 1


# Parts of a date or year column's name that say it is one, beside the event it dates
# ("open_year", "date_effective_from", "date_on_market").
_WHEN_PARTS = frozenset({"year", "date", "time", "day", "on", "at", "from", "dt"})
_WHEN_PREPOSITIONS = {"in": "=", "during": "=", "before": "<", "after": ">", "since": ">="}
# "When did …", "when was …": a question asking for the date of an event.
_WHEN_AUXILIARIES = frozenset(
    {"did", "do", "does", "was", "were", "is", "are", "has", "have", "had"}
)


def _event_column(reading: _Reading, i: int) -> Col | None:
    """The one date or year column whose name is the word at ``i`` and words saying it
    is a date ("opened" for ``open_year``, "effective" for ``date_effective_from``)."""
    token = reading.tokens[i] if i < reading.size else None
    if token is None or token.quoted or token.number is not None or len(token.low) < 4:
        return None
    vocab = reading.ctx.vocab
    found = []
    for col in vocab.columns:
        parts = _split_when(vocab.column_words[col.key])
        event = [p for p in parts if p not in _WHEN_PARTS]
        dated = is_temporal(col.column.data_type) or "year" in parts
        if (
            dated
            and len(event) == 1
            and len(parts) > 1
            and (
                word_match(token.stem, event[0]) >= 0.9
                or word_match(lemma(token.low), event[0]) >= 0.9
            )
        ):
            found.append(col)
    return found[0] if len(found) == 1 else None


def _split_when(parts: list[str]) -> list[str]:
    """A name's words with a date word run into another split off: a folded
    ``sbCustJoinDate`` is the one word "joindate", which is "join" + "date"."""
    split: list[str] = []
    for part in parts:
        tail = next(
            (w for w in DATE_NAME_WORDS if part.endswith(w) and len(part) >= len(w) + 3), ""
        )
        split += [part[: -len(tail)], tail] if tail else [part]
    return split


def _scope_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    """ "most common across all people", "over all the visits": the rows an aggregate or a
    ranking is taken over, which the statement reads whole: no condition."""
    if reading.low(i) not in ("across", "over") or reading.low(i + 1) != "all":
        return None
    j = reading.skip(i + 2, frozenset({"the"}))
    tables = reading.longest(j, ("table",))
    if not tables or tables[0].table is None:
        return None
    read.mention_table(tables[0].table)
    reading.use(i, tables[0].end)
    return tables[0].end


def _later_count(reading: _Reading, read: _Read, i: int) -> int | None:
    """ "the name and theme for all concerts *and the number of singers* in each": a count
    asked after a clause, read as one more item."""
    if reading.low(i) not in ("and", ",") or read.kind == "count":
        return None
    j = reading.skip(i + 1, frozenset({"the", "their", "its", "corresponding", "total"}))
    if not reading.match(j, ("number of", "count of", "numbers of")):
        return None
    reading.use(i, j)
    return _items(reading, read, j)


def _when_event(reading: _Reading, read: _Read, i: int) -> int | None:
    """ "When did the customers join?": the word a date or year column is named after
    ("join" for ``sbCustJoinDate``, "opened" for ``open_year``) is what the answer lists."""
    if not read.when:
        return None
    col = _event_column(reading, i)
    if col is None:
        return None
    read.when = False
    mention = Mention("column", i, i + 1, 1.0, col=col)
    read.items.append(_Item("", i, i + 1, [mention]))
    read.mention_table(col.table)
    reading.use(i, i + 1)
    return i + 1


def _event_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    """ "museums opened in 2010", "templates became effective before 2005", "went on the
    market after 2016": the word a date or year column is named after, then a year, is
    a condition on that column (a year column compared with the year, a date column
    kept to the year's dates)."""
    j = i + 1
    op = _WHEN_PREPOSITIONS.get(reading.low(j))
    if op is None or not _is_year(reading, j + 1):
        return None  # the cheap test first: the column scan runs only before a year
    col = _event_column(reading, i)
    if col is None:
        return None
    year = int(reading.number(j + 1) or 0)
    read.conditions.append(_Condition(i, j + 2, [], op, str(year), dimension="when", col=col))
    read.mention_table(col.table)
    reading.use(i, j + 2)
    return j + 2


def _order_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    phrase = reading.match(i, tuple(_ORDER_PHRASES))
    if phrase:
        n = len(phrase.split())
        j = reading.skip(i + n, frozenset({"the", "their", "its", "his", "her"}))
        target = reading.longest(j, ("column",))
        descending = _ORDER_PHRASES[phrase]
        if target:
            end = target[0].end
            direction = reading.match(end, tuple(_DIRECTIONS))
            if direction:
                descending = _DIRECTIONS[direction]
                reading.use(end, end + len(direction.split()))
            read.order.append((target, descending))
            reading.use(i, end)
            return end + len(direction.split()) if direction else end
        if phrase.startswith(("ordered by", "sorted by", "order by", "sort by", "ranked by")):
            return None
        read.order_items = descending
        reading.use(i, i + n)
        return i + n
    direction = reading.match(i, tuple(_DIRECTIONS))
    if direction and (read.order or read.order_items is not None):
        n = len(direction.split())
        if read.order:
            mentions, _ = read.order[-1]
            read.order[-1] = (mentions, _DIRECTIONS[direction])
        else:
            read.order_items = _DIRECTIONS[direction]
        reading.use(i, i + n)
        return i + n
    return None


def _group_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    phrase = reading.match(i, _GROUP_PHRASES)
    if not phrase:
        return None
    n = len(phrase.split())
    j = reading.skip(i + n, frozenset({"the", "a", "an", "different", "distinct"}))
    columns = reading.longest(j, ("column",))
    tables = reading.longest(j, ("table",))
    if tables and (not columns or tables[0].size >= columns[0].size):
        table = tables[0].table
        assert table is not None
        read.groups.append(tables)
        read.mention_table(table)
        reading.use(i, tables[0].end)
        return tables[0].end
    if columns:
        read.groups.append(columns)
        reading.use(i, columns[0].end)
        return columns[0].end
    if phrase == "each" and reading.low(j) in ("one", "of", "type", "kind"):
        return None
    return None


def _top_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    if reading.low(i) not in ("top", "first") or reading.number(i + 1) is None:
        return None
    read.limit = int(reading.number(i + 1) or 0)
    reading.use(i, i + 2)
    return i + 2


def _rank_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    low = reading.low(i)
    if low in _RANKED:
        dimension, descending = _RANKED[low]
        j = i + 1
        tables = reading.longest(j, ("table",))
        end = tables[0].end if tables else j
        if tables:
            assert tables[0].table is not None
            read.mention_table(tables[0].table)
        read.ranks.append(_Rank(i, [], descending, dimension=dimension))
        reading.use(i, end)
        return end
    common = reading.match(i, ("most common", "most frequent", "most popular", "least common",
                               "least frequent", "least popular"))  # fmt: skip
    if common:
        n = len(common.split())
        j = reading.skip(i + n)
        columns = reading.longest(j, ("column",))
        read.ranks.append(_Rank(i, columns, common.startswith("most"), by_count=True))
        end = columns[0].end if columns else i + n
        reading.use(i, end)
        return end
    if low not in _MOST:
        return None
    if reading.low(i - 1) == "at":  # "at most 3": a bound
        return None
    j = i + 1
    if reading.low(j) == "number" and reading.low(j + 1) == "of":
        j += 2
    tables = reading.longest(j, ("table",))
    columns = reading.longest(j, ("column",))
    number_of = j != i + 1
    if tables and (not columns or _table_first(tables, columns) or number_of):
        table = tables[0].table
        assert table is not None
        read.ranks.append(_Rank(i, [], _MOST[low], count_of=table))
        read.mention_table(table)
        reading.use(i, tables[0].end)
        return tables[0].end
    if columns:
        read.ranks.append(_Rank(i, columns, _MOST[low]))
        reading.use(i, columns[0].end)
        return columns[0].end
    return None


def _table_first(tables: list[Mention], columns: list[Mention]) -> bool:
    """A phrase naming a table at least as long and as surely as any column: the table."""
    return tables[0].size > columns[0].size or (
        tables[0].size == columns[0].size and tables[0].score >= columns[0].score
    )


def _comparison(reading: _Reading, i: int) -> tuple[str, int] | None:
    """A comparison phrase at ``i``: its operator and where it ends."""
    phrase = reading.match(i, tuple(_COMPARE))
    if phrase:
        return _COMPARE[phrase], i + len(phrase.split())
    if reading.low(i) in ("is", "are", "was", "were"):
        inner = _comparison(reading, i + 1)
        if inner is not None:
            return inner
    return None


def _literal(number: float) -> str:
    return str(int(number)) if number == int(number) else repr(number)


def _compare_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    # "<column> [is] above 30", "above 30", "more than 3 <table|column>", "older than 30"
    start = i
    columns = _numeric_columns(reading, i)
    j = columns[0].end if columns else i
    if columns and reading.low(j) in ("is", "are", "was", "were"):
        j += 1  # "whose weight is heavier than 10"
    dimension = ""
    op = ""
    if reading.low(j) in _DIMENSIONS and reading.low(j + 1) == "than":
        dimension, op = _DIMENSIONS[reading.low(j)]
        if columns:
            dimension = ""  # the column said it: "weight is heavier than 10"
        j += 2
    elif not columns and (split := _split_comparison(reading, j)) is not None:
        # "a greater weight than 10", "above age 20": the column inside the comparison
        op, columns, j = split
    else:
        found = _comparison(reading, j)
        if found is None:
            between = _between(reading, read, i, columns)
            return between
        op, j = found
    j = reading.skip(j, frozenset({"the", "a", "an"}))
    if reading.low(j) in ("average", "mean", "avg"):
        return _than_average(reading, read, start, columns, dimension=dimension, op=op, j=j)
    number = reading.number(j)
    if number is None:
        return None
    end = j + 1
    after_tables = reading.longest(end, ("table",))
    after_columns = reading.longest(end, ("column",))
    if (
        after_tables
        and not columns
        and not dimension
        and (not after_columns or after_tables[0].size >= after_columns[0].size)
    ):
        table = after_tables[0].table
        assert table is not None
        read.counted.append(_Counted(table, op, int(number)))
        read.mention_table(table)
        reading.use(start, after_tables[0].end)
        return after_tables[0].end
    mentions = columns
    if not mentions and not dimension and after_columns:
        mentions = after_columns
        end = after_columns[0].end
    if not mentions and not dimension:
        return None
    read.conditions.append(
        _Condition(start, end, mentions, op, _literal(number), dimension=dimension)
    )
    reading.use(start, end)
    return end


# "a greater weight than 10": the comparative before the column, "than" after it
_SPLIT_COMPARATIVES = {
    phrase.split()[0]: op
    for phrase, op in _COMPARE.items()
    if len(phrase.split()) == 2 and phrase.endswith(" than")
}


def _split_comparison(reading: _Reading, i: int) -> tuple[str, list[Mention], int] | None:
    """A comparison around a numeric column, then a number: "a greater weight than 10"
    (comparative, column, "than") or "above age 20" (comparison, column); its operator,
    the column's mentions and where the number starts."""
    j = reading.skip(i, frozenset({"a", "an", "the"}))
    op = _SPLIT_COMPARATIVES.get(reading.low(j), "")
    if op:
        columns = _numeric_columns(reading, j + 1)
        if columns and reading.low(columns[0].end) == "than":
            return op, columns, columns[0].end + 1
        return None
    found = _comparison(reading, i)
    if found is None:
        return None
    op, j = found
    columns = _numeric_columns(reading, j)
    if columns and reading.number(columns[0].end) is not None:
        return op, columns, columns[0].end
    return None


def _numeric_columns(reading: _Reading, i: int) -> list[Mention]:
    """The mentions at ``i`` of columns holding quantities (no key, no reference)."""
    return [
        m
        for m in reading.longest(i, ("column",))
        if m.col is not None
        and is_number(m.col.column.data_type)
        and not is_key(m.col)
        and not refers_to_rows(reading.ctx, m.col)
    ]


def _between(reading: _Reading, read: _Read, i: int, columns: list[Mention]) -> int | None:
    j = columns[0].end if columns else i
    if reading.low(j) in ("is", "are", "was", "were"):
        j += 1
    if reading.low(j) != "between":
        return None
    low, high = reading.number(j + 1), reading.number(j + 3)
    if low is None or high is None or reading.low(j + 2) != "and" or not columns:
        return None
    read.conditions.append(_Condition(i, j + 4, columns, ">=", _literal(low)))
    read.conditions.append(_Condition(i, j + 4, columns, "<=", _literal(high)))
    reading.use(i, j + 4)
    return j + 4


def _than_average(
    reading: _Reading,
    read: _Read,
    start: int,
    columns: list[Mention],
    *,
    dimension: str,
    op: str,
    j: int,
) -> int:
    end = j + 1
    after = reading.longest(end, ("column",))
    if after and not columns and not dimension:
        columns = after
        end = after[0].end
    elif after:
        end = after[0].end
    if not columns and not dimension:
        raise Decline("an average of something the question does not name")
    read.conditions.append(_Condition(start, end, columns, op, "AVERAGE", dimension=dimension))
    reading.use(start, end)
    return end


def _value_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    start = i
    if reading.low(i) in _PREPOSITIONS:
        i = reading.skip(i + 1, frozenset({"the", "a", "an", "year", "years"}) if
                         reading.low(i) == "in" else frozenset({"the", "a", "an"}))  # fmt: skip
    columns = reading.longest(i, ("column",))
    j = columns[0].end if columns else i
    named = reading.low(j) in ("named", "called", "titled")
    if named or reading.low(j) in ("is", "are", "was", "were", "of", "=", "as", "either"):
        j += 1
        if reading.low(j) == "either":
            j += 1
    year = not columns and reading.low(start) in ("in", "during") and _is_year(reading, j)
    group: list[_Condition] = []
    while True:
        values = reading.longest(j, ("value",))
        number = reading.number(j) if (columns or year) else None
        if values:
            group.append(_Condition(start, values[0].end, columns, "=", "", col=None))
            group[-1].mentions = columns + values
            end = values[0].end
        elif number is not None and reading.tokens[j].number is not None:
            group.append(_Condition(start, j + 1, columns, "=", _literal(number)))
            if year:
                group[-1].dimension = "year"
            end = j + 1
        else:
            break
        if named:
            group[-1].dimension = "name"
        j = end
        bound = reading.match(j, tuple(_OR_BOUND))
        if bound and len(group) == 1 and group[0].value:
            group[0].op = _OR_BOUND[bound]
            j += len(bound.split())
            group[0].end = j
            break
        if reading.low(j) == "or" or (reading.low(j) == "," and reading.low(j + 1) != "and"):
            nxt = j + 1
            if reading.longest(nxt, ("value",)) or (
                (columns or year) and reading.tokens[nxt].number is not None
                if nxt < reading.size
                else False
            ):
                j = nxt
                continue
        break
    if not group:
        # "with 8 cylinders": a number, then the column it counts
        number = reading.number(i) if i < reading.size and reading.tokens[i].number else None
        after = reading.longest(i + 1, ("column",)) if number is not None else []
        if number is None or not after or start == i:
            return None
        group.append(_Condition(start, after[0].end, after, "=", _literal(number)))
    reading.use(start, group[-1].end)
    if len(group) == 1:
        read.conditions.append(group[0])
    else:
        read.ors.append(group)
    return group[-1].end


def _is_year(reading: _Reading, i: int) -> bool:
    number = reading.tokens[i].number if i < reading.size else None
    return number is not None and 1800 <= number <= 2100 and number == int(number)


def _absent_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    # "that do not have any X", "without X", "with no X", "who are not X", "that do not
    # have a cat pet", "who did not visit any museum opened after 2010"
    j = i
    if reading.low(j) in ("who", "that", "which"):
        j += 1
    negated = False
    while j < reading.size and reading.low(j) in (
        "do", "does", "did", "not", "have", "has", "had", "are", "is", "were", "was",
        "never", "no", "without", "any", "a", "an", "with", "been", "in", "own", "owns",
    ):  # fmt: skip
        negated = negated or reading.low(j) in _NEGATIONS
        j += 1
    if not negated or j == i:
        return None
    # the negated phrase: values, comparisons and one table, up to the next clause
    inner = _Read(read.kind)
    end = j
    table: TableInfo | None = None
    while end < reading.size and reading.low(end) not in _CLAUSE_START:
        tables = reading.longest(end, ("table",))
        columns = reading.longest(end, ("column",))
        if tables and (not columns or _table_first(tables, columns)) and table is None:
            table = tables[0].table
            reading.use(end, tables[0].end)
            end = tables[0].end
            continue
        after = _compare_clause(reading, inner, end) or _value_clause(reading, inner, end)
        if after is None:
            verb = _verb_table(reading, end)
            if verb is not None and table is None:
                table = verb
                reading.use(end, end + 1)
            end += 1
            continue
        end = after
    if inner.ors or inner.counted or inner.ranks:
        raise Decline("a negated phrase the reader cannot compose")
    if table is None:
        tables_of_values = {
            m.col.table.qualified: m.col.table
            for c in inner.conditions
            for m in c.mentions
            if m.col is not None
        }
        if len(tables_of_values) != 1:
            return None
        table = next(iter(tables_of_values.values()))
    read.anti.append((table, inner.conditions))
    read.mention_table(table)
    reading.use(i, j)
    return end


def _verb_table(reading: _Reading, i: int) -> TableInfo | None:
    """A verb naming a table by its first letters ("hire" for ``hiring``)."""
    verb = reading.tokens[i].stem if i < reading.size else ""
    if len(verb) < 4:
        return None
    for m in reading.chart.mentions:
        if (
            m.kind == "table"
            and m.size == 1
            and m.table is not None
            and (verb[:4] == reading.tokens[m.start].stem[:4])
        ):
            return m.table
    for table in reading.ctx.catalog.tables:
        if table.name.lower().startswith(verb[:4]):
            return table
    return None


def _present_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    # "who have a pet", "that have likes"
    j = i
    if reading.low(j) in ("who", "that", "which"):
        j += 1
    if reading.low(j) not in ("have", "has", "had", "own", "owns"):
        return None
    j = reading.skip(j + 1, frozenset({"a", "an", "any", "some", "the"}))
    tables = reading.longest(j, ("table",))
    if not tables:
        return None
    table = tables[0].table
    assert table is not None
    read.semi.append(table)
    read.mention_table(table)
    reading.use(i, tables[0].end)
    return tables[0].end


def _table_clause(reading: _Reading, read: _Read, i: int) -> int | None:
    tables = reading.longest(i, ("table",))
    columns = reading.longest(i, ("column",))
    if not tables or (columns and columns[0].size > tables[0].size):
        return None
    table = tables[0].table
    assert table is not None
    if read.entity is None:
        read.entity = table
    read.mention_table(table)
    reading.use(i, tables[0].end)
    return tables[0].end


# --- the plan -------------------------------------------------------------------------


def _plan(reading: _Reading, read: _Read) -> Plan:
    ctx = reading.ctx
    entity = _owner_of_items(read) or read.entity
    if entity is None:
        entity = _entity_of_items(read)
    if entity is None:
        raise Decline("the question names no table")
    read.mention_table(entity)
    plan = Plan(distinct=read.distinct and read.kind != "count")
    resolve = _Resolver(read, entity, _referenced(ctx, entity), ctx.graph)
    for item in read.items:
        _add_item(ctx, plan, resolve, item, distinct=read.distinct)
    resolved: list[tuple[Col, _Condition]] = []
    for condition in read.conditions:
        # "a cat that is age 3": a condition said of the row the previous one picked
        # (a pet's age, not the student's)
        before = resolved[-1] if resolved else None
        resolve.near = (
            before[0].table
            if before is not None and _said_of(reading, before[1].end, condition.start)
            else None
        )
        resolved.append((resolve.condition(condition), condition))
    resolve.near = None
    for col, condition in resolved:
        plan.filters.append((col, _condition_sql(ctx, col, condition)))
    _no_row_meets_both(ctx, resolved)
    for group in read.ors:
        alternatives = []
        for condition in group:
            col = resolve.condition(condition)
            alternatives.append((col, _condition_sql(ctx, col, condition)))
        plan.ors.append(alternatives)
    for mentions in read.groups:
        _add_group(ctx, plan, resolve, mentions)
    for counted in read.counted:
        plan.having.append((Measure("COUNT", table=counted.table, label=counted.table.name),
                            counted.op, counted.number))  # fmt: skip
        if counted.table is not entity and not plan.dims:
            plan.entity = entity
            plan.dims += [Dim(c) for c in _labels(ctx, entity)]
        elif counted.table is not entity:
            plan.entity = entity if any(d.col.table is entity for d in plan.dims) else None
    for rank in read.ranks:
        _add_rank(ctx, plan, resolve, rank, limit=read.limit or 1)
    for mentions, descending in read.order:
        target = _target(plan, resolve.column(mentions))
        plan.order.append((target, descending))
    if read.order_items is not None:
        if not plan.dims and not plan.measures:
            raise Decline("an order of nothing")
        plan.order.append(("d0" if plan.dims else "m0", read.order_items))
    if read.head_limit and not plan.order:
        raise Decline("how many rows to give, but ranked by nothing")
    if read.limit:
        plan.limit = read.limit
    for table, conditions in read.anti:
        if table is entity:
            raise Decline("the rows the question lists cannot lack themselves")
        _add_absent(ctx, plan, entity, table, conditions)
    used = _tables_used(plan) | {t.qualified for t in plan.anti}
    used |= {t.qualified for t, _ in read.anti}
    for table in read.tables + read.semi:
        if table.qualified not in used and table is not entity:
            plan.semi.append(table)
            used.add(table.qualified)
    if not plan.dims and not plan.measures:
        raise Decline("the question asks for nothing the reader placed")
    if not plan.measures and not plan.having and not plan.limit:
        # rows of the entity listed through many related rows: each row once
        plan.distinct = plan.distinct or _fans_out(
            ctx, entity, _tables_used(plan) | {t.qualified for t in plan.semi}
        )
    return plan


def _fans_out(ctx: LinkContext, entity: TableInfo, tables: set[str]) -> bool:
    """Whether joining ``tables`` to ``entity`` can repeat its rows: the way to one of
    them starts at a table that references the entity (one entity, many of them)."""
    for name in tables - {entity.qualified}:
        path = ctx.graph.path(entity.qualified, name)
        if path and path[0].parent == entity.qualified and path[0].child != entity.qualified:
            return True
    return False


def _owner_of_items(read: _Read) -> TableInfo | None:
    """The one table every shown column phrase can mean a column of ("paragraph texts for
    the document ..." lists paragraphs, whatever table comes next; in "the id and name of
    the document" only ``documents`` has both)."""
    common: set[str] | None = None
    tables: dict[str, TableInfo] = {}
    for item in read.items:
        if item.func == "COUNT" or item.label:
            return None
        if item.table is not None:
            owners = {item.table.qualified}
            tables[item.table.qualified] = item.table
        else:
            owners = set()
            for m in item.mentions:
                if m.col is not None:
                    owners.add(m.col.table.qualified)
                    tables[m.col.table.qualified] = m.col.table
        if not owners:
            return None
        common = owners if common is None else common & owners
    return tables[next(iter(common))] if common is not None and len(common) == 1 else None


def _entity_of_items(read: _Read) -> TableInfo | None:
    """With no table named, the table the most phrases can mean a column of (items,
    groups, conditions, orders): "the average age for each type of pet" is about pets,
    the one table holding both an age and a type; a tie is no answer."""
    if read.tables:
        return read.tables[0]
    phrases: list[list[Mention]] = [item.mentions for item in read.items if item.mentions]
    phrases += read.groups + [c.mentions for c in read.conditions]
    phrases += [mentions for mentions, _ in read.order] + [r.mentions for r in read.ranks]
    votes: dict[str, int] = {}
    first: dict[str, TableInfo] = {}
    for mentions in phrases:
        for table in {m.col.table.qualified: m.col.table for m in mentions if m.col}.values():
            votes[table.qualified] = votes.get(table.qualified, 0) + 1
            first.setdefault(table.qualified, table)
    for item in read.items:
        if item.table is not None:
            votes[item.table.qualified] = votes.get(item.table.qualified, 0) + 1
            first.setdefault(item.table.qualified, item.table)
    if not votes:
        return None
    best = max(votes.values())
    winners = [name for name, n in votes.items() if n == best]
    return first[winners[0]] if len(winners) == 1 else None


class _Resolver:
    """Which column an ambiguous phrase means: one of the entity, then of a table the
    question names, then the only one; a tie is a refusal, never a guess."""

    def __init__(
        self,
        read: _Read,
        entity: TableInfo,
        referenced: Sequence[TableInfo] = (),
        graph: JoinGraph | None = None,
    ) -> None:
        self.read = read
        self.entity = entity
        self.graph = graph
        self.near: TableInfo | None = None  # the table a relative clause speaks of
        # the rows each entity row refers to (one each): their columns are the entity's
        # too ("poker players taller than 200": a player is a person, with a height)
        self.referenced = referenced

    def _rank(self, col: Col) -> float:
        if col.table is self.near:
            return 3.0
        if col.table is self.entity:
            return 2.0
        if col.table in self.read.tables:
            return 1.0
        return 0.0

    def column(self, mentions: Sequence[Mention]) -> Col:
        cols = [(m.score + self._rank(m.col), m.col) for m in mentions if m.col is not None]
        if not cols:
            raise Decline("a phrase names no column")
        cols.sort(key=lambda p: -p[0])
        best = cols[0]
        rivals = [c for s, c in cols[1:] if abs(s - best[0]) < 1e-9 and c.key != best[1].key]
        if rivals and self.graph is not None:
            # ``has_pet.petid`` holds ``pets.petid``: one value, said twice; the key it is
            same = [best[1], *rivals]
            keys = [c for c in same if all(c is o or self._holds(o, c) for o in same)]
            if len(keys) == 1:
                return keys[0]
        if rivals:
            raise Decline(
                f"{best[1].column.name} could be a column of {best[1].table.name} or of "
                f"{rivals[0].table.name}"
            )
        return best[1]

    def _holds(self, child: Col, parent: Col) -> bool:
        """``child`` is a reference to ``parent`` (a key joined to it)."""
        assert self.graph is not None
        return any(
            e.child == child.table.qualified
            and e.parent == parent.table.qualified
            and e.child_columns == (child.column.name,)
            and e.parent_columns == (parent.column.name,)
            for e in self.graph.edges_of(child.table.qualified)
        )

    def dimension(self, word: str) -> Col:
        tables = [self.entity, *(t for t in self.read.tables if t is not self.entity)]
        tables += [t for t in self.referenced if t not in tables]
        # a column called just that, of any table in scope, before one that has the word
        # in its name ("concerts in 2014": ``concert.year``, not ``song_release_year``)
        exact = [Col(t, c) for t in tables for c in t.columns if c.name.lower() == word]
        if len(exact) == 1:
            return exact[0]
        for table in tables:
            found = [c for c in table.columns if word in c.name.lower().split("_")
                     or c.name.lower().endswith(word)]  # fmt: skip
            if len(found) == 1:
                return Col(table, found[0])
        raise Decline(f"no column says {word!r}")

    def condition(self, condition: _Condition) -> Col:
        if condition.col is not None:
            return condition.col
        values = [m for m in condition.mentions if m.kind == "value"]
        columns = [m for m in condition.mentions if m.kind == "column"]
        if condition.dimension == "name" and not columns:
            labels = [c for c in name_columns(self.entity)]
            if len(labels) != 1:
                raise Decline("a name, but no one name column")
            return labels[0]
        if condition.dimension and not columns:
            return self.dimension(condition.dimension)
        stored = [m for m in values if m.col is not None]
        if columns:
            col = self.column(columns)
            if stored and not any(m.col is not None and m.col.key == col.key for m in stored):
                raise Decline(f"the value is not one of {col.column.name}")
            return col
        if stored:
            return self.column(stored)
        raise Decline("a quoted value, but no column says what it is")


_RELATIVE = frozenset({"that", "which", "who", "whose", "with"})


def _said_of(reading: _Reading, end: int, start: int) -> bool:
    """Only a relative pronoun and a verb of being or having between two conditions
    ("cat *that is* age 3"): the second is said of what the first picked."""
    between = [reading.low(k) for k in range(end, start)]
    return bool(between) and bool(_RELATIVE & set(between)) and set(between) <= _RELATIVE | {
        "is", "are", "was", "were", "has", "have", "had", "a", "an", "the"
    }  # fmt: skip


def _referenced(ctx: LinkContext, entity: TableInfo) -> list[TableInfo]:
    """The tables ``entity``'s rows refer to by a key (declared or inferred), each row to
    one row of each."""
    parents = {
        e.parent for e in ctx.graph.edges_of(entity.qualified) if e.child == entity.qualified
    }
    return [t for t in ctx.catalog.tables if t.qualified in parents and t is not entity]


def _labels(ctx: LinkContext, table: TableInfo) -> list[Col]:
    """The columns that name a row of ``table`` in an answer: its one name column, a
    person's first and last name, else its key."""
    if not any(c.name.lower() == "name" for c in table.columns):
        person = person_name(table)
        if person:
            return person
    names = name_columns(table)
    if len(names) == 1:
        return names
    if table.primary_key:
        key = table.column(table.primary_key[0])
        if key is not None:
            return [Col(table, key)]
    raise Decline(f"nothing names a row of {table.name}")


def _add_item(
    ctx: LinkContext, plan: Plan, resolve: _Resolver, item: _Item, *, distinct: bool
) -> None:
    if item.func == "COUNT" and item.table is not None:
        func = "COUNT_DISTINCT" if distinct else "COUNT"
        plan.measures.append(Measure(func, table=item.table, label=item.table.name))
        return
    if item.table is not None:
        plan.dims += [Dim(c) for c in _labels(ctx, item.table)]
        return
    if item.label:
        cols = _labels(ctx, resolve.entity)
        if item.func:
            plan.measures.append(Measure(item.func, col=cols[0], label=cols[0].column.name))
        else:
            plan.dims += [Dim(c) for c in cols]
        return
    col = resolve.column(item.mentions)
    if item.func == "COUNT_DISTINCT":
        plan.measures.append(Measure("COUNT_DISTINCT", col=col, label=col.column.name))
    elif item.func:
        if item.func in ("AVG", "SUM") and not is_number(col.column.data_type):
            raise Decline(f"{col.column.name} holds no numbers")
        plan.measures.append(Measure(item.func, col=col, label=col.column.name))
    else:
        plan.dims.append(Dim(col))


def _add_group(ctx: LinkContext, plan: Plan, resolve: _Resolver, mentions: list[Mention]) -> None:
    tables = [m.table for m in mentions if m.table is not None]
    if tables:
        table = tables[0]
        plan.entity = table
        if not any(d.col.table is table for d in plan.dims):
            plan.dims += [Dim(c) for c in _labels(ctx, table)]
        return
    col = resolve.column(mentions)
    if not any(d.col.key == col.key for d in plan.dims):
        plan.dims.append(Dim(col))


def _target(plan: Plan, col: Col) -> str:
    """The output slot ordering by ``col`` (added to the output when not shown)."""
    for i, d in enumerate(plan.dims):
        if d.col.key == col.key and not d.grain:
            return f"d{i}"
    for i, m in enumerate(plan.measures):
        if m.col is not None and m.col.key == col.key and m.func in ("MAX", "MIN", "AVG", "SUM"):
            return f"m{i}"
    if plan.measures:
        raise Decline("ordering grouped rows by a column that is not grouped")
    plan.dims.append(Dim(col))
    return f"d{len(plan.dims) - 1}"


def _add_rank(ctx: LinkContext, plan: Plan, resolve: _Resolver, rank: _Rank, *, limit: int) -> None:
    entity = resolve.entity
    if rank.count_of is not None or rank.by_count:
        if rank.by_count:
            col = resolve.column(rank.mentions) if rank.mentions else None
            if col is None:
                shown = [d for d in plan.dims]
                if len(shown) != 1:
                    raise Decline("most common, but of what")
                col = shown[0].col
            if not any(d.col.key == col.key for d in plan.dims):
                plan.dims.append(Dim(col))
            plan.measures.append(Measure("COUNT", table=col.table, label="count"))
        else:
            assert rank.count_of is not None
            counted = Measure("COUNT", table=rank.count_of, label=rank.count_of.name)
            plan.measures.append(counted)
            if rank.count_of is not entity:
                plan.entity = entity
            if not plan.dims:
                plan.dims += [Dim(c) for c in _labels(ctx, entity)]
        plan.order.append((f"m{len(plan.measures) - 1}", rank.descending))
        plan.limit = limit
        return
    col = resolve.dimension(rank.dimension) if rank.dimension else resolve.column(rank.mentions)
    if plan.measures:
        raise Decline("a superlative over grouped rows")
    plan.order.append((_target(plan, col), rank.descending))
    plan.limit = limit


def _add_absent(
    ctx: LinkContext, plan: Plan, entity: TableInfo, table: TableInfo, conditions: list[_Condition]
) -> None:
    """Rows of ``entity`` with no related row of ``table`` (meeting ``conditions``): a
    direct reference without conditions is the composer's anti-join; otherwise NOT
    EXISTS over the join path, the conditions inside it."""
    path = ctx.graph.path(entity.qualified, table.qualified)
    if not path:
        raise Decline(f"nothing relates {entity.name} and {table.name}")
    if not conditions and len(path) == 1:
        plan.anti.append(table)
        return
    sub = _Resolver(_Read("list", tables=[table]), table)
    tables = [entity.qualified]
    for edge in path:
        tables.append(edge.other(tables[-1]))
    aliases = {name: f"s{k}" for k, name in enumerate(tables[1:], 1)}
    first = path[0]
    joins = ""
    for k, edge in enumerate(path[1:], 2):
        there = tables[k]
        on = " AND ".join(f"s{k}.{quote(a)} = s{k - 1}.{quote(b)}" for a, b in edge.pairs(there))
        joins += f" JOIN {table_sql(_table(ctx, there))} AS s{k} ON {on}"
    where = [f"s1.{quote(a)} = {{c}}" for a, _ in first.pairs(tables[1])]
    if len(first.pairs(tables[1])) != 1:
        raise Decline("a composite key to an absent row")
    for condition in conditions:
        col = sub.condition(condition)
        if col.table.qualified not in aliases:
            raise Decline(f"{col.column.name} is not on the way to {table.name}")
        text = _condition_sql(ctx, col, condition)
        where.append(
            text.replace("{c}", f"{aliases[col.table.qualified]}.{quote(col.column.name)}")
        )
    ((key, _),) = first.pairs(entity.qualified)
    key_col = entity.column(key)
    assert key_col is not None
    sql = f"NOT EXISTS (SELECT 1 FROM {table_sql(_table(ctx, tables[1]))} AS s1{joins} WHERE {' AND '.join(where)})"
    plan.filters.append((Col(entity, key_col), sql))
    plan.inner += [_table(ctx, name) for name in tables[1:]]
    said = [condition_words(_condition_sql(ctx, c, condition), c.column.name)
            for condition in conditions for c in [sub.condition(condition)]]  # fmt: skip
    plan.absent.append(table.name + (" with " + " and ".join(said) if said else ""))


def _table(ctx: LinkContext, name: str) -> TableInfo:
    table = ctx.catalog.table(name)
    assert table is not None
    return table


def _condition_sql(ctx: LinkContext, col: Col, condition: _Condition) -> str:
    values = [m for m in condition.mentions if m.kind == "value"]
    if condition.value == "AVERAGE":
        if not is_number(col.column.data_type):
            raise Decline(f"{col.column.name} holds no numbers")
        average = f"SELECT AVG(a.{quote(col.column.name)}) FROM {table_sql(col.table)} AS a"
        return f"{{c}} {condition.op} ({average})"
    if values:
        value = next((m.value for m in values if m.col is not None and m.col.key == col.key),
                     values[0].value)  # fmt: skip
        if is_number(col.column.data_type):
            try:
                float(value)
            except ValueError:
                raise Decline(f"{col.column.name} holds numbers, not {value!r}") from None
            return f"{{c}} {condition.op} {value}"
        return f"{{c}} {condition.op} {lit(value)}"
    if condition.dimension == "when":
        return _year_sql(col, condition.op, int(condition.value))
    if not is_number(col.column.data_type) and not is_temporal(col.column.data_type):
        raise Decline(f"{col.column.name} holds no numbers to compare")
    if is_temporal(col.column.data_type):
        raise Decline("a number compared with a date")
    return f"{{c}} {condition.op} {condition.value}"


def _no_row_meets_both(ctx: LinkContext, conditions: list[tuple[Col, _Condition]]) -> None:
    """ "visited both a museum opened before 2009 and one opened after 2011", "opened
    before 2009 and opened after 2011": two conditions on one column that no row meets
    together ask for rows meeting each in turn (a set intersection the reader does not
    compose); ANDed they answer nothing, so the question is refused."""
    by_column: dict[tuple[str, str], list[_Condition]] = {}
    for col, condition in conditions:
        by_column.setdefault(col.key, []).append(condition)
    for said in by_column.values():
        if len(said) < 2:
            continue
        if re.search(r"\bboth\b", ctx.low):
            raise Decline("'both' of two conditions on one column: rows meeting each")
        numbers = [
            (c.op, float(c.value)) for c in said if re.fullmatch(r"-?\d+(?:\.\d+)?", c.value)
        ]
        below = [v for op, v in numbers if op in ("<", "<=")]
        above = [v for op, v in numbers if op in (">", ">=")]
        equal = {v for op, v in numbers if op == "="}
        if (below and above and max(above) >= min(below)) or len(equal) > 1:
            raise Decline("two conditions on one column that no row meets together")


def _year_sql(col: Col, op: str, year: int) -> str:
    """A year said of a date or year column: the year's dates (half-open) for a date; the
    number, or its text where the column holds text, for a year."""
    if is_temporal(col.column.data_type):
        start, end = lit(f"{year}-01-01"), lit(f"{year + 1}-01-01")
        return {
            "=": f"{{c}} >= {start} AND {{c}} < {end}",
            "<": f"{{c}} < {start}",
            ">": f"{{c}} >= {end}",
            ">=": f"{{c}} >= {start}",
        }[op]
    value = str(year) if is_number(col.column.data_type) else lit(str(year))
    return f"{{c}} {op} {value}"


def _tables_used(plan: Plan) -> set[str]:
    used = {d.col.table.qualified for d in plan.dims}
    for m in plan.measures:
        if m.col is not None:
            used.add(m.col.table.qualified)
        if m.table is not None:
            used.add(m.table.qualified)
    used |= {c.table.qualified for c, _ in plan.filters}
    used |= {c.table.qualified for group in plan.ors for c, _ in group}
    used |= {h[0].table.qualified for h in plan.having if h[0].table is not None}
    return used
