"""What a catalog says about itself, indexed for linking questions: the parts of every
table and column name and their weights, the other names comments give, the states
comments define, stored values and their words, and the value index of proper names."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import (
    Catalog,
    CodeSystem,
    ColumnInfo,
    JoinGraph,
    TableInfo,
    place_names,
    unqualified_names,
)
from services.sql.definitions import GlossaryEntry
from services.sql.words import (
    SOFT_WORDS,
    STOP_WORDS,
    common_prefix,
    cover,
    lemma,
    name_words,
    stem,
)

_WORD_MEMO_MAX = 20_000


@dataclass(frozen=True)
class Col:
    table: TableInfo
    column: ColumnInfo

    @property
    def key(self) -> tuple[str, str]:
        return (self.table.qualified, self.column.name)


def column_words(table: TableInfo) -> dict[str, list[str]]:
    """The words of each column's name as the linker reads them (stemmed, a prefix every
    column of the table shares dropped), by column: a table's own, whichever catalog of
    its load holds it, so what is derived from them once per load (the value vectors of
    ``linker._valued``) is what every narrowed vocabulary of that load reads."""
    names = [c.name for c in table.columns]
    col_prefix = common_prefix(names, minimum=3) if len(names) >= 4 else ""
    found: dict[str, list[str]] = {}
    for column in table.columns:
        cname = column.name
        if col_prefix and len(cname) > len(col_prefix):
            cname = cname[len(col_prefix) :]
        found[column.name] = [stem(w) for w in name_words(cname)]
    return found


class Vocabulary:
    """Name parts of every table and column, their weights, and the stored-value index.

    A part is a piece of a name between ``_`` or camelCase boundaries (``start_dt`` ->
    start, dt); lower-cased concatenations (``tickersymbol``) stay one part and are
    matched by how much of them the question's words cover."""

    def __init__(self, catalog: Catalog, graph: JoinGraph) -> None:
        self.catalog = catalog
        self.graph = graph
        # definitions parsed against this catalog (filled by the linker; parsing is pure,
        # and a rendered definition is always a copy, so a parse serves every question)
        self.definitions: dict[GlossaryEntry, tuple[exp.Expr, dict[int, Col]] | None] = {}
        # what the mention chart finds out about single words against this catalog (which
        # name parts a word touches, whether it names a column), remembered: pure, and
        # questions reuse their words
        self.word_memo: dict[tuple[str, str], object] = {}
        self._column_scores: dict[tuple[tuple[str, ...], tuple[str, str]], float] = {}
        table_prefix = common_prefix([t.name for t in catalog.tables]).lower()
        self.table_words: dict[str, list[str]] = {}
        self.column_words: dict[tuple[str, str], list[str]] = {}
        # other names the schema's own comments give ("Sales opportunities (deals)")
        self.table_aliases: dict[str, list[list[str]]] = {}
        self.column_aliases: dict[tuple[str, str], list[list[str]]] = {}
        self.columns: list[Col] = []
        counts: dict[str, int] = {}
        for table in catalog.tables:
            name = table.name
            if table_prefix and name.lower().startswith(table_prefix):
                name = name[len(table_prefix) :]
            self.table_words[table.qualified] = [stem(w) for w in name_words(name)]
            self.table_aliases[table.qualified] = comment_names(table.comment, head=True)
            keys = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
            own_words = column_words(table)
            for column in table.columns:
                words = own_words[column.name]
                self.column_words[(table.qualified, column.name)] = words
                aliases = [] if column.name in keys else comment_names(column.comment)
                # "(calls, meetings, demos)" lists rows by a stored value: examples
                aliases = [a for a in aliases if not _stored_in(a, table)]
                self.column_aliases[(table.qualified, column.name)] = aliases
                self.columns.append(Col(table, column))
                for w in set(words).union(*aliases):
                    counts[w] = counts.get(w, 0) + 1
        # a name said without its qualifier ("wallet transactions" for
        # wallet_transactions_daily), where the shorter name is that table's alone
        for qualified, shorter in unqualified_names(catalog.tables).items():
            own = set(self.table_words[qualified])
            self.table_aliases[qualified] += [list(s) for s in shorter if set(s) <= own]
        total = max(len(self.columns), 1)
        self.idf = {w: math.log(1 + total / n) for w, n in counts.items()}
        self.values: dict[str, list[tuple[Col, str]]] = {}
        # a word of a multi-word stored value ("won" of 'Closed Won'), by its lemma
        self.value_words: dict[str, list[tuple[Col, str]]] = {}
        # proper names stored in varied text columns ("cobalt academy" -> companies.name)
        self.names: dict[str, list[tuple[Col, str]]] = {}
        for col in self.columns:
            for value in (*col.column.known_values, *col.column.sample_values):
                self.names.setdefault(value.lower(), []).append((col, value))
            for value in (*col.column.sample_values, *_comment_values(col.column.comment)):
                self.values.setdefault(value.lower(), []).append((col, value))
                words = re.findall(r"[a-z]+", value.lower())
                if len(words) > 1:
                    for w in words:
                        if len(w) > 2 and w not in STOP_WORDS:
                            self.value_words.setdefault(lemma(w), []).append((col, value))
        self._add_spaced()
        # places named in full where the column stores their standard code ("Texas" ->
        # customers.state 'TX'), read as that stored value; a name some column stores as
        # written keeps that reading alone
        self.places: dict[str, list[tuple[Col, str, CodeSystem]]] = {}
        for col in self.columns:
            held = place_names((*col.column.known_values, *col.column.sample_values))
            for name, (code, system) in held.items():
                if name not in self.names or name in self.places:
                    self.places.setdefault(name, []).append((col, code, system))
        # the words of the places each stored code stands for: a statement comparing
        # with 'TX' explains the question's "Texas"
        self.code_words: dict[str, set[str]] = {}
        for name, places in self.places.items():
            self.names[name] = [(col, code) for col, code, _ in places]
            for _, code, _ in places:
                self.code_words.setdefault(code.lower(), set()).update(name.split())

    def _add_spaced(self) -> None:
        """Stored words joined by ``_`` or ``-`` ('credit_card', 'Jet-black') also found
        as said, with a space ("credit card"): a question never writes a code's joiner.
        Only where every joined part is a word of letters (a phone number or a model
        code like 'CX-5' stays as written), and never over a value stored with spaces
        (that one is what the words say)."""
        spaced: dict[str, list[tuple[Col, str]]] = {}
        for low, held in self.names.items():
            said = spaced_value(low)
            if said is not None and said not in self.names:
                spaced.setdefault(said, []).extend(held)
        self.names.update(spaced)

    @functools.cached_property
    def named_words(self) -> frozenset[str]:
        """Every word a column or table of the catalog is named by, stemmed as a
        question's words are compared. Built on first use and kept with this vocabulary
        (one per catalog load and view: a refreshed catalog gets a new one), since the
        verifier's grouping checks ask for it on every statement they check."""
        known = {stem(w) for parts in self.column_words.values() for w in parts}
        known.update(w for parts in self.table_words.values() for w in parts)
        return frozenset(known)

    @functools.cached_property
    def held_words(self) -> dict[str, dict[tuple[str, str], list[tuple[Col, str]]]]:
        """The columns whose read values (known and sampled) hold each word of a
        multi-word value ("denver" -> airports.name for 'Denver Intl', airports.tzone for
        'America/Denver'): a word is inside one value only where no other column's values
        hold it too. Built on first use: only a word inside exactly one sampled value
        asks, so the common reading pays nothing."""
        held: dict[str, dict[tuple[str, str], list[tuple[Col, str]]]] = {}
        for col in self.columns:
            for value in (*col.column.known_values, *col.column.sample_values):
                words = re.findall(r"[a-z]+", value.lower())
                if len(words) > 1:
                    for w in words:
                        if len(w) > 2 and w not in STOP_WORDS:
                            found = held.setdefault(lemma(w), {})
                            found.setdefault(col.key, []).append((col, value))
        return held

    def remember(self, key: tuple[str, str], value: object) -> None:
        """Keep a word's finding; bounded, so endless distinct words cost no memory."""
        if len(self.word_memo) >= _WORD_MEMO_MAX:
            self.word_memo.clear()
        self.word_memo[key] = value

    def weight(self, word: str) -> float:
        return self.idf.get(word, math.log(1 + len(self.columns)))

    def table_names(self, table: TableInfo) -> list[list[str]]:
        """The table's name parts, then each other name its comment gives."""
        return [self.table_words[table.qualified], *self.table_aliases[table.qualified]]

    def table_score(self, words: Sequence[str], table: TableInfo) -> float:
        """How much of a table's name (or of another name its comment gives) the words
        cover (0..1); remembered like a column's."""
        key = (tuple(words), (table.qualified, ""))
        found = self._column_scores.get(key)
        if found is None:
            if len(self._column_scores) >= _WORD_MEMO_MAX:
                self._column_scores.clear()
            best = 0.0
            for parts in self.table_names(table):
                if parts:
                    best = max(best, sum(cover(words, p)[0] for p in parts) / len(parts))
            found = self._column_scores[key] = best
        return found

    def tables_named(self, words: Sequence[str]) -> list[tuple[TableInfo, float]]:
        found = []
        for table in self.catalog.tables:
            score = self.table_score(words, table)
            if score >= 0.99:
                found.append((table, score))
        return sorted(found, key=lambda p: -p[1])

    def column_score(self, words: Sequence[str], col: Col) -> float:
        """Weighted coverage of the column's name parts (or of another name its comment
        gives) by ``words``, plus a bonus when the other words name the column's table,
        less a little per unexplained word. Remembered: pure, and asked again and again
        for the same few words."""
        key = (tuple(words), col.key)
        found = self._column_scores.get(key)
        if found is None:
            if len(self._column_scores) >= _WORD_MEMO_MAX:
                self._column_scores.clear()
            found = self._column_scores[key] = max(
                self._name_score(words, col, parts)
                for parts in (self.column_words[col.key], *self.column_aliases[col.key])
            )
        return found

    def _name_score(self, words: Sequence[str], col: Col, parts: Sequence[str]) -> float:
        if not parts:
            return 0.0
        total = sum(self.weight(p) for p in parts)
        got = 0.0
        used: set[int] = set()
        for p in parts:
            share, which = cover(words, p)
            if share:
                used |= which
                got += share * self.weight(p)
        if not got:
            return 0.0
        coverage = got / total
        leftover = [w for i, w in enumerate(words) if i not in used]
        table_bonus = self.table_score(leftover, col.table) if leftover else 0.0
        if not table_bonus and leftover:
            # "price" half-names "dailyprice": partial credit for the column's own table
            tparts = self.table_words[col.table.qualified]
            table_bonus = (
                0.5 * sum(cover(leftover, p, partial=0.4)[0] for p in tparts) / max(len(tparts), 1)
            )
        table_parts = [p for name in self.table_names(col.table) for p in name]
        unexplained = sum(
            1
            for w in leftover
            if not any(cover([w], p, partial=0.4)[0] for p in table_parts) and w not in SOFT_WORDS
        )
        return coverage + 0.35 * table_bonus - 0.15 * unexplained


_PARENS = re.compile(r"\(([^()]{2,80})\)")


def comment_names(comment: str, *, head: bool = False) -> list[list[str]]:
    """Other names a comment gives its table or column: the comma-separated words in its
    first parentheses ("Sales representatives (reps, account owners)"), and with ``head``
    the short phrase the comment opens with before them ("sales representatives")."""
    match = _PARENS.search(comment)
    if match is None:
        return []
    names = []
    for item in re.split(r",|\bor\b", match.group(1)):
        words = re.findall(r"[a-z]+", item.lower())
        if 1 <= len(words) <= 3 and not any(w in STOP_WORDS for w in words):
            names.append([stem(w) for w in words])
    opening = re.findall(r"[a-z]+", comment[: match.start()].lower())
    if head and 1 < len(opening) <= 3 and not any(w in STOP_WORDS for w in opening):
        names.append([stem(w) for w in opening])
    return names


def _stored_in(words: Sequence[str], table: TableInfo) -> bool:
    """Whether the words are a stored value of one of the table's columns."""
    phrase = " ".join(words)
    return any(
        " ".join(stem(w) for w in re.findall(r"[a-z]+", v.lower())) == phrase
        for c in table.columns
        for v in c.sample_values
    )


def column_states(column: ColumnInfo) -> list[tuple[list[str], str]]:
    """The states a column's comment defines, each as its words and the condition that
    means it: "False when the product is discontinued" (boolean), "When the account was
    archived (churned); NULL for active accounts" (nullable)."""
    comment = column.comment.lower()
    found: list[tuple[list[str], str]] = []
    if column.data_type == "boolean":
        for m in re.finditer(
            r"\b(true|false) (?:when|for|if|while) (?:the |a |an )?[a-z]+ "
            r"(?:is|are|was|were|has|have|had|has been|is not|was not) ([a-z]+)",
            comment,
        ):
            found.append(([m.group(2)], "{c}" if m.group(1) == "true" else "NOT {c}"))
    elif column.nullable:
        state = re.match(
            r"when (?:the |a |an )?[a-z]+ (?:was|is|were|got|has been) ([a-z]+)", comment
        )
        if state:
            also = re.match(r"\s*\(([a-z]+)\)", comment[state.end() :])
            found.append(([state.group(1), *([also.group(1)] if also else [])], "{c} IS NOT NULL"))
        unset = re.search(r"\bnull (?:for|while|when) (?:the |a |an )?([a-z]+)", comment)
        if unset and unset.group(1) != "otherwise":
            found.append(([unset.group(1)], "{c} IS NULL"))
    return found


def negate_state(cond: str) -> str:
    return {
        "{c}": "NOT {c}",
        "NOT {c}": "{c}",
        "{c} IS NOT NULL": "{c} IS NULL",
        "{c} IS NULL": "{c} IS NOT NULL",
    }[cond]


def _comment_values(comment: str) -> list[str]:
    match = re.search(r"possible values:\s*(.+)", comment, re.IGNORECASE)
    if not match:
        return []
    return [v.strip(" .'\"") for v in match.group(1).split(",") if v.strip(" .'\"")]


_JOINED = re.compile(r"[a-z]+(?:[_-][a-z]+)+")


def spaced_value(value: str) -> str | None:
    """A stored value of letter words joined by ``_`` or ``-``, as said with spaces
    ("credit_card" -> "credit card"); None for any other value."""
    low = value.lower()
    if not _JOINED.fullmatch(low):
        return None
    return re.sub(r"[_-]", " ", low)
