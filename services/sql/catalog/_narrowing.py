"""The tables a question is linked against: its candidates, not the whole warehouse.

A warehouse of a thousand tables is a few dozen tables a question could mean, their
look-alike copies (``_families``), and everything else. Linking a question against all of
it costs time on every question and invites a copy or a stranger to take a link, so each
question is linked against a candidate set:

- a copy is left out unless the question names it (all of its name's words, side by side:
  "the singer archive"), and then it stands in for the table it copies;
- when more than :data:`NARROW_ABOVE` tables remain, the ones the question's words point
  at are kept (an inverted index over table and column names, comments and stored values,
  rarer words counting more), from the part of the warehouse joins connect that explains
  the words best (and any part explaining them nearly as well: a statement reads tables a
  join path connects, so a stranger sharing one word stays out), with their join
  neighbours, so a bridge table between two named tables is never lost;
- a table of another part whose name says a question word at least as strongly as any
  kept table's name does is kept too, with its neighbours: the other words chose the part,
  but that word names both alike, and a small catalog's linker would see both (keyless,
  "cars" names ``cars_data`` as much as ``car_makers``; left out, "3 cars" was read as a
  count of the makers' models);
- so is a table of another part whose key stores a value the question (not its
  instructions) names, when a kept table's column storing it holds the same kind of
  values (most of the smaller column's values shared): the left-out table is the list of
  the things the kept column names, joined to it by no key, so which of the two the
  question means is the linker's to tell, as in a small catalog (left out, the value was
  read in the kept table alone, where the small catalog's linker saw it in two places and
  refused). Not a column word, nor a value stored in a column that is no key (a singer's
  citizenship 'France' beside a list of car-making countries), nor a key of other things
  sharing a value or two: each would bring in every stranger sharing it.

A small catalog without copies is linked whole, exactly as before. The answer says which
table it read and which look-alikes it passed over (:meth:`Narrowed.note`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from services.sql.catalog._catalog import Catalog, TableInfo
from services.sql.catalog._families import qualified_words, table_words
from services.sql.catalog._joins import JoinGraph
from services.sql.words import (
    GRAMMAR_WORDS,
    SOFT_WORDS,
    STOP_WORDS,
    lemma,
    name_words,
    stem,
    word_match,
)

# More linkable tables than this (a small schema has fewer) and a question is linked against
# its candidates only; a catalog this small is read whole, in a few milliseconds.
NARROW_ABOVE = 16
# The tables a question's words point at most strongly, before their join neighbours.
SEED_TABLES = 8
CANDIDATES_MAX = 32
# How much each place a word is found in says about its table.
_NAME, _COLUMN, _COMMENT, _VALUE = 3.0, 1.0, 0.5, 1.0
_SOFT = 0.25
# A part of the warehouse that explains the words at least this share as well as the best
# one stays a candidate too.
_NEAR = 0.8
# A name says a word as strongly as another's when within float rounding of it.
_TIE = 1 - 1e-9
# Two columns hold the same kind of values when they share more than this share of the
# smaller one's values.
_SAME_VALUES = 0.5
_LOOKALIKES_SHOWN = 3
_TERM_MEMO_MAX = 20_000
_QUESTION_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Narrowed:
    """A question's candidate tables as a catalog, and the copies left out for it."""

    catalog: Catalog
    # table read -> its look-alikes left out (qualified names)
    passed_over: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # copy the question names -> the table it stands in for
    named: Mapping[str, str] = field(default_factory=dict)

    def note(self, tables_used: Iterable[str]) -> str:
        """Sentences saying which table an answer read where look-alikes were passed
        over, and which copy it read where the question named one (empty for neither)."""
        notes = []
        for name in dict.fromkeys(tables_used):
            table = self.catalog.table(name)
            if table is None:
                continue
            if table.qualified in self.named:
                notes.append(
                    f"Read {table.qualified}, which the question names, rather than "
                    f"{self.named[table.qualified]}."
                )
                continue
            copies = self.passed_over.get(table.qualified, ())
            if copies:
                shown = ", ".join(copies[:_LOOKALIKES_SHOWN])
                more = len(copies) - _LOOKALIKES_SHOWN
                rest = f" and {more} more" if more > 0 else ""
                notes.append(f"Read {table.qualified}, passing over its look-alikes {shown}{rest}.")
        return " ".join(notes)


def index_of(catalog: Catalog) -> CatalogIndex:
    """The catalog's look-alike copies and word index, from which each question's
    candidate tables are drawn: built once per catalog load and kept with it."""
    found = catalog.derived.get("index")
    if not isinstance(found, CatalogIndex):
        found = catalog.derived["index"] = CatalogIndex(catalog)
    return found


class CatalogIndex:
    """What narrowing needs from one catalog, built once per catalog load."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.copies: dict[str, list[TableInfo]] = {}
        for table in catalog.tables:
            if table.lookalike_of:
                self.copies.setdefault(table.lookalike_of, []).append(table)
        self.linkable = [t for t in catalog.tables if not t.lookalike_of]
        self.wide = len(self.linkable) > NARROW_ABOVE
        # each copy by its words as a question names it (in any order)
        self._copy_names: dict[tuple[str, ...], list[TableInfo]] = {}
        for copies in self.copies.values():
            for table in copies:
                key = tuple(sorted(qualified_words(table)))
                self._copy_names.setdefault(key, []).append(table)
        self._spans = sorted({len(k) for k in self._copy_names})
        self._postings: dict[str, dict[int, float]] = {}
        # what each table's own name says of a word (the name's share of ``_postings``)
        self._named: dict[str, dict[int, float]] = {}
        # the tables storing a word in a value: the values of each column storing it, and
        # whether that column tells the table's rows apart (its key)
        self._held: dict[str, dict[int, list[tuple[frozenset[str], bool]]]] = {}
        self._parts: list[str] = []
        self._neighbours: dict[str, set[str]] = {}
        self._part: list[int] = []
        self._term_memo: dict[str, list[tuple[str, float]]] = {}
        if self.wide:
            self._index()

    def _index(self) -> None:
        for i, table in enumerate(self.linkable):
            found: dict[str, float] = {}

            def add(words: Iterable[str], weight: float, found: dict[str, float] = found) -> None:
                for word in words:
                    if word not in STOP_WORDS and found.get(word, 0.0) < weight:
                        found[word] = weight

            own = set(table_words(table)) - STOP_WORDS
            # a name of many words says each of them less (``int_concert_singer_stadium``
            # is about a stadium far less than ``stadium`` is)
            add(own, _NAME / max(len(own), 1))
            for word in own:
                self._named.setdefault(word, {})[i] = _NAME / len(own)
            add(_text_words(table.comment), _COMMENT)
            for column in table.columns:
                add((stem(w) for w in name_words(column.name)), _COLUMN)
                add(_text_words(column.comment), _COMMENT)
                values = (*column.sample_values, *column.known_values)
                said = [_text_words(value) for value in values]
                for value_words in said:
                    add(value_words, _VALUE)
                kind = frozenset(value.strip().lower() for value in values)
                key = (column.name,) in (table.primary_key, *table.unique_keys)
                for word in {w for value_words in said for w in value_words} - STOP_WORDS:
                    self._held.setdefault(word, {}).setdefault(i, []).append((kind, key))
            for word, weight in found.items():
                self._postings.setdefault(word, {})[i] = weight
        names = [name for t in self.linkable for name in (t.name, *(c.name for c in t.columns))]
        self._parts = sorted({stem(w) for name in names for w in name_words(name)})
        position = {t.qualified: i for i, t in enumerate(self.linkable)}
        joined = _Parts(len(self.linkable))
        for a, b in _edges(self.catalog):
            self._neighbours.setdefault(a, set()).add(b)
            self._neighbours.setdefault(b, set()).add(a)
            if a in position and b in position:
                joined.union(position[a], position[b])
        self._part = [joined.find(i) for i in range(len(self.linkable))]

    def narrow(self, question: str, *, context: str = "") -> Narrowed:
        """The tables ``question`` is linked against (see the module docstring);
        ``context`` is what else the question is read with (the request's instructions,
        the definitions of the terms it uses): its words point at tables too."""
        if not self.copies and not self.wide:
            return Narrowed(self.catalog)
        words = [stem(w) for w in _QUESTION_WORD.findall(question.lower())]
        named = self._named_copies(words)
        stands_in = {t.lookalike_of for t in named}
        pool = [t for t in self.linkable if t.qualified not in stands_in] + named
        if self.wide:
            said = words + [stem(w) for w in _QUESTION_WORD.findall(context.lower())]
            chosen = self._candidates(said, stands_in, asked=words)
            chosen |= {t.qualified for t in named}
        else:
            chosen = {t.qualified for t in pool}
        tables = tuple(t for t in self.catalog.tables if t.qualified in chosen)
        joins = self.catalog.joins
        if joins is not None:
            joins = tuple(j for j in joins if j.child in chosen and j.parent in chosen)
        passed = {
            name: tuple(t.qualified for t in copies)
            for name, copies in self.copies.items()
            if name in chosen
        }
        return Narrowed(
            self.catalog.narrowed(tables, joins),
            passed,
            {t.qualified: t.lookalike_of for t in named},
        )

    def _named_copies(self, words: list[str]) -> list[TableInfo]:
        """Copies whose every name word the question says side by side; of copies named
        by the same words, the one whose own name (not its schema) says most of them."""
        found: dict[str, TableInfo] = {}
        for size in self._spans:
            for start in range(len(words) - size + 1):
                tables = self._copy_names.get(tuple(sorted(words[start : start + size])))
                if tables:
                    best = max(tables, key=lambda t: (len(table_words(t)), -len(t.qualified)))
                    found[best.qualified] = best
        return list(found.values())

    def _candidates(
        self, words: list[str], left_out: set[str], *, asked: Iterable[str] = ()
    ) -> set[str]:
        """The tables the words point at: of the parts of the warehouse joins connect
        (a statement reads tables a join path connects), the one that explains the
        question's words best, with any that explain them nearly as well; in them, the
        tables the words point at most strongly and their neighbours. ``asked``: the
        words of the question itself (not of its instructions), whose stored values keep
        the tables holding them alike (the module docstring)."""
        total = len(self.linkable)
        scores: dict[int, dict[str, float]] = {}
        # of ``scores``, what each table's name alone says of each word
        names: dict[int, dict[str, float]] = {}
        for word in dict.fromkeys(w for w in words if w not in STOP_WORDS):
            # "average", "number", "most common", "top": said of any table, they point at
            # none (though a column may be named so)
            soft = _SOFT if word in SOFT_WORDS or word in GRAMMAR_WORDS else 1.0
            for term, strength in self._terms(word):
                postings = self._postings.get(term, {})
                if not postings:
                    continue
                rarity = math.log(1 + total / len(postings))
                for i, weight in postings.items():
                    mine = scores.setdefault(i, {})
                    mine[word] = max(mine.get(word, 0.0), soft * strength * weight * rarity)
                for i, weight in self._named.get(term, {}).items():
                    mine = names.setdefault(i, {})
                    mine[word] = max(mine.get(word, 0.0), soft * strength * weight * rarity)
        allowed = {i for i in scores if self.linkable[i].qualified not in left_out}
        if not allowed:
            return set()
        parts: dict[int, list[int]] = {}
        for i in allowed:
            parts.setdefault(self._part[i], []).append(i)

        def explains(members: list[int]) -> float:
            said: dict[str, float] = {}
            for i in members:
                for word, score in scores[i].items():
                    said[word] = max(said.get(word, 0.0), score)
            return sum(said.values())

        explained = {part: explains(members) for part, members in parts.items()}
        top = max(explained.values())
        # parts the words fit about as well are all kept: the linker tells them apart
        kept = [i for part, members in parts.items() if explained[part] >= _NEAR * top
                for i in members]  # fmt: skip
        ranked = sorted(kept, key=lambda i: (-sum(scores[i].values()), i))
        first = ranked[:SEED_TABLES]
        # a word that names a table of another part as strongly as any kept one does
        # brings it too, after the kept ones
        alike = _named_alike(names, allowed, first)
        alike += [i for i in self._holding_alike(asked, allowed, first) if i not in alike]
        chosen: dict[str, None] = {}
        for group in (first, alike):
            seeds = [self.linkable[i].qualified for i in group]
            chosen.update(dict.fromkeys(seeds))
            for seed in seeds:
                for other in sorted(self._neighbours.get(seed, ())):
                    if other not in left_out:
                        chosen.setdefault(other)
        return set(list(chosen)[:CANDIDATES_MAX])

    def _holding_alike(self, asked: Iterable[str], allowed: set[int], kept: list[int]) -> list[int]:
        """Tables left out whose key stores a value a question word names, where a kept
        table's column storing it holds the same kind of values (module docstring): the
        left-out table lists the things the kept column names, so the linker, not the
        narrowing, tells which table the question reads the value in."""
        found: list[int] = []
        seeds = set(kept)
        for word in dict.fromkeys(w for w in asked if w not in STOP_WORDS):
            terms = [
                (t, sure) for t, sure in self._terms(word) if seeds & self._held.get(t, {}).keys()
            ]
            if not terms:
                continue
            # the surest reading of the word a kept table stores: a table storing only a
            # looser one says the word less
            surest = max(sure for _, sure in terms)
            for term, sure in terms:
                if sure < surest * _TIE:
                    continue
                holders = self._held[term]
                kinds = [kind for i in seeds & holders.keys() for kind, _ in holders[i]]
                for i in sorted(allowed & holders.keys() - seeds):
                    if i not in found and any(
                        key and _same_values(mine, theirs)
                        for mine, key in holders[i]
                        for theirs in kinds
                    ):
                        found.append(i)
        return found

    def _terms(self, word: str) -> list[tuple[str, float]]:
        """Index terms a question word may mean, with how surely: itself and its lemma,
        then name parts it inflects or abbreviates, sits inside (``customer`` in
        ``sbcustomer``), or opens (``flight`` in ``flightno``). Remembered per word:
        questions repeat their words."""
        known = self._term_memo.get(word)
        if known is not None:
            return known
        found = {word: 1.0, lemma(word): 1.0}
        for part in self._parts:
            if part in found:
                continue
            if part[0] == word[0]:  # an inflection or a short form keeps the first letter
                match = word_match(word, part)
                if match >= 0.9 or (match >= 0.8 and len(part) > 2):  # "ts" is no "transaction"
                    found[part] = match
                    continue
            if len(word) >= 4 and word in part:
                found[part] = 0.8
            elif len(word) >= 4 and len(part) >= 6 and part.startswith(word[:4]):
                found[part] = 0.5
        if len(self._term_memo) >= _TERM_MEMO_MAX:
            self._term_memo.clear()
        terms = self._term_memo[word] = list(found.items())
        return terms


def _named_alike(
    names: Mapping[int, Mapping[str, float]], allowed: set[int], kept: list[int]
) -> list[int]:
    """Tables left out whose name says a question word at least as strongly as the name of
    any kept table does: the other words chose the part, but this word names both alike,
    and which table it means is the linker's to tell (a small catalog's linker sees them
    all; "cars" is ``cars_data`` as much as ``car_makers``). A word no kept table's name
    says brings none: a stranger named by a word the kept part reads in a column stays
    out."""
    best: dict[str, float] = {}
    for i in kept:
        for word, said in names.get(i, {}).items():
            best[word] = max(best.get(word, 0.0), said)
    return [
        i
        for i in sorted(allowed - set(kept))
        if any(said >= best.get(word, math.inf) * _TIE for word, said in names.get(i, {}).items())
    ]


def _same_values(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two columns hold the same kind of values: they share most of the smaller
    one's (more than :data:`_SAME_VALUES`: ``port_code`` and ``origin`` sharing most
    codes), not a value or two that things of other kinds happen to carry too."""
    return len(one & other) > _SAME_VALUES * min(len(one), len(other))


def _text_words(text: str) -> list[str]:
    return [stem(w) for w in _QUESTION_WORD.findall(text.lower()) if len(w) > 1]


def _edges(catalog: Catalog) -> list[tuple[str, str]]:
    """Every pair of tables a join relates, as the linker's join paths see them: keys
    (declared, from the glossary, inferred), and shared values as their last resort."""
    return [(e.child, e.parent) for e in JoinGraph(catalog).edges]


class _Parts:
    """Union-find over table positions: the parts of a warehouse joins connect."""

    def __init__(self, size: int) -> None:
        self._parent = list(range(size))

    def find(self, i: int) -> int:
        while self._parent[i] != i:
            self._parent[i] = self._parent[self._parent[i]]
            i = self._parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self._parent[self.find(a)] = self.find(b)
