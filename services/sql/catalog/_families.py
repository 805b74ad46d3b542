"""Look-alike tables: the copies a warehouse keeps beside the table the business means.

A warehouse's ``singer`` sits beside ``stg_singer``, ``singer_archive``, ``singer_2019``,
``archive.singer`` and copies loaded under other names, every one with the same columns and
some of the rows. A question about singers means one of them; linked to a copy it answers
from the wrong rows, confidently. The copies are found from the structure, not from a
list of warehouse words:

- **the same columns**: names and types, in any order;
- **the same noun**: one name's words are the other's plus some (``singer`` ⊂
  ``stg_singer``, ``singer_2019``), or the same words in another schema; the extra words
  are thereby the warehouse's own affixes (``stg``, ``2019``, ``archive``), and two names
  that differ only by such affixes name the same noun too (``stg_pets_student`` and
  ``raw_pets_student_2021`` beside a ``raw_orders``/``orders`` pair). A word that is a
  table's whole name (``concert``) is a noun, never an affix.

Of each family one table is the one meant, the **canonical** table: the one other tables
reference (a declared foreign key or a glossary join), else the one whose name is the
plain noun (the fewest words), else the one in ``public`` (or the schema holding most
tables), else the one with more rows. The others are linked only when a question names
them (``the singer archive``), and an answer says which table it read and which
look-alikes it passed over.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from services.sql.catalog._catalog import Catalog, JoinInfo, TableInfo
from services.sql.words import name_words, stem


@dataclass(frozen=True)
class Family:
    """Tables with the same columns and the same noun: the canonical one and its copies."""

    canonical: TableInfo
    lookalikes: tuple[TableInfo, ...]
    # why the canonical table is the one meant, in words
    reason: str

    @property
    def members(self) -> tuple[TableInfo, ...]:
        return (self.canonical, *self.lookalikes)


def table_words(table: TableInfo) -> tuple[str, ...]:
    """The stems of a table's name words (``stg_Singers_2019`` -> stg, singer, 2019)."""
    return _stems(table.name)


def qualified_words(table: TableInfo) -> tuple[str, ...]:
    """A table's words as a question names it: its schema's too when not ``public``
    (``archive.singer`` is "the singer archive")."""
    schema = () if table.schema == "public" else _stems(table.schema)
    return (*schema, *table_words(table))


@functools.lru_cache(maxsize=16384)
def _stems(name: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in name_words(name))


def _signature(table: TableInfo) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((c.name.lower(), c.data_type) for c in table.columns))


class _Sets:
    """Union-find over qualified names."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        root = self._parent.setdefault(item, item)
        while root != self._parent[root]:
            root = self._parent[root]
        while item != root:
            self._parent[item], item = root, self._parent[item]
        return root

    def union(self, a: str, b: str) -> None:
        self._parent[self.find(a)] = self.find(b)


def lookalike_groups(tables: Sequence[TableInfo]) -> list[list[TableInfo]]:
    """The families of ``tables`` (two members or more), members in catalog order."""
    by_signature: dict[tuple[tuple[str, str], ...], list[TableInfo]] = {}
    for table in tables:
        if table.columns:
            by_signature.setdefault(_signature(table), []).append(table)
    groups = [members for members in by_signature.values() if len(members) > 1]
    words = {t.qualified: frozenset(table_words(t)) for members in groups for t in members}
    nouns = {next(iter(w)) for w in (frozenset(table_words(t)) for t in tables) if len(w) == 1}
    sets = _Sets()
    affixes: set[str] = set()
    for members in groups:
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                wa, wb = words[a.qualified], words[b.qualified]
                if not wa or not wb:
                    continue
                if wa < wb or wb < wa:
                    sets.union(a.qualified, b.qualified)
                    affixes |= (wb - wa) if wa < wb else (wa - wb)
                elif wa == wb:  # the same name in another schema
                    sets.union(a.qualified, b.qualified)
    affixes -= nouns
    for members in groups:
        by_noun: dict[frozenset[str], list[TableInfo]] = {}
        for table in members:
            noun = words[table.qualified] - affixes
            if noun:
                by_noun.setdefault(noun, []).append(table)
        for same in by_noun.values():
            for other in same[1:]:
                sets.union(same[0].qualified, other.qualified)
    found: dict[str, list[TableInfo]] = {}
    for members in groups:
        for table in members:
            found.setdefault(sets.find(table.qualified), []).append(table)
    order = {t.qualified: i for i, t in enumerate(tables)}
    return [
        sorted(members, key=lambda t: order[t.qualified])
        for members in found.values()
        if len(members) > 1
    ]


def unqualified_names(tables: Sequence[TableInfo]) -> dict[str, list[tuple[str, ...]]]:
    """Each table's name less its qualifier word, where that shorter name is the table's
    alone: ``wallet_transactions_daily`` is "wallet transactions" when ``daily`` ends
    other names of the catalog too (``wallet_user_balance_daily``) and no other table is
    named by "wallet transactions". People name a table by its noun and leave out the
    grain or layer it is kept in, as they leave out ``stg`` or ``2019`` of a copy.

    A qualifier is recognised as the families recognise affixes, from the structure: a
    word at the same end (first or last) of two or more names of several words, that is
    no table's whole name (a noun is never an affix). What remains must keep two words or
    more (one word left, "payments" of ``payments_made``, may be the head noun, not the
    table); a look-alike neither gets a shorter name nor keeps its table from one (a
    copy is linked only when named), and two tables left with the same words, or one
    whose name holds those words or is said by them (``wallet_transactions_monthly``,
    ``wallet_transactions``), leave the shorter name unsaid: never a silent choice."""
    own = [t for t in tables if not t.lookalike_of]
    words = {t.qualified: table_words(t) for t in own}
    nouns = {w[0] for w in words.values() if len(w) == 1}
    ends: Counter[tuple[int, str]] = Counter()
    for w in words.values():
        if len(w) > 1:
            ends.update({(0, w[0]), (-1, w[-1])})
    qualifiers = {end for end, n in ends.items() if n > 1 and end[1] not in nouns}
    shorter: dict[str, set[tuple[str, ...]]] = {}
    for name, w in words.items():
        for end in (0, -1):
            if len(w) > 2 and (end, w[end]) in qualifiers:
                shorter.setdefault(name, set()).add(w[1:] if end == 0 else w[:-1])
    taken = Counter(s for found in shorter.values() for s in found)
    found: dict[str, list[tuple[str, ...]]] = {}
    for name, candidates in shorter.items():
        for short in sorted(candidates):
            said = set(short)
            if taken[short] == 1 and not any(
                other != name and (set(w) <= said or said <= set(w)) for other, w in words.items()
            ):
                found.setdefault(name, []).append(short)
    return found


def referenced_tables(catalog: Catalog, joins: Iterable[JoinInfo] = ()) -> set[str]:
    """Tables other tables reference: by a declared foreign key, or by ``joins``."""
    found = set()
    for table in catalog.tables:
        for fk in table.foreign_keys:
            parent = catalog.table(fk.referenced_table)
            if parent is not None and parent.qualified != table.qualified:
                found.add(parent.qualified)
    found |= {j.parent for j in joins if j.parent != j.child}
    return found


def _rules(
    referenced: set[str], schema_sizes: Mapping[str, int], rows: Mapping[str, int]
) -> tuple[tuple[str, Callable[[TableInfo], Any]], ...]:
    return (
        ("other tables reference it", lambda t: 0 if t.qualified in referenced else 1),
        ("its name is the plain noun", lambda t: len(table_words(t))),
        (
            "it is in the default schema",
            lambda t: (0 if t.schema == "public" else 1, -schema_sizes.get(t.schema, 0)),
        ),
        ("it holds the most rows", lambda t: -rows.get(t.qualified, -1)),
    )


def _narrowed(
    members: Sequence[TableInfo], rules: Sequence[tuple[str, Callable[[TableInfo], Any]]]
) -> tuple[list[TableInfo], str]:
    """The members every rule in turn keeps (each applied to those the earlier ones left
    tied), and the last rule that told them apart."""
    tied = list(members)
    reason = ""
    for why, rank in rules:
        if len(tied) == 1:
            break
        best = min(rank(t) for t in tied)
        kept = [t for t in tied if rank(t) == best]
        if len(kept) < len(tied):
            tied, reason = kept, why
    return tied, reason


def choose_canonical(
    members: Sequence[TableInfo],
    *,
    referenced: set[str],
    schema_sizes: Mapping[str, int],
    rows: Mapping[str, int],
) -> Family:
    """The family's canonical table by the rules of the module docstring; ``rows`` by
    qualified name (a member without a known count counts as none)."""
    tied, reason = _narrowed(members, _rules(referenced, schema_sizes, rows))
    canonical = min(tied, key=lambda t: (t.schema, t.name))
    if len(tied) > 1:
        reason = f"{reason}, and its name comes first" if reason else "its name comes first"
    others = tuple(t for t in members if t is not canonical)
    return Family(canonical, others, reason)


def needs_rows(
    members: Sequence[TableInfo], *, referenced: set[str], schema_sizes: Mapping[str, int]
) -> bool:
    """Whether only row counts can tell the family's canonical table."""
    rules = _rules(referenced, schema_sizes, {})[:-1]
    return len(_narrowed(members, rules)[0]) > 1


def schema_sizes(tables: Iterable[TableInfo]) -> dict[str, int]:
    return dict(Counter(t.schema for t in tables))


def mark_lookalikes(catalog: Catalog, families: Iterable[Family]) -> Catalog:
    """The catalog with each copy marked as a look-alike of its family's canonical table."""
    marks: dict[str, tuple[str, str]] = {}
    for family in families:
        canonical = family.canonical.qualified
        why = f"same columns as {canonical}, and {canonical} is meant: {family.reason}"
        for table in family.lookalikes:
            marks[table.qualified] = (canonical, why)
    if not marks:
        return catalog
    tables = tuple(
        replace(t, lookalike_of=marks[t.qualified][0], lookalike_evidence=marks[t.qualified][1])
        if t.qualified in marks
        else t
        for t in catalog.tables
    )
    return replace(catalog, tables=tables)


def families_of(catalog: Catalog) -> list[Family]:
    """The families a loaded catalog marks (its look-alikes grouped under their table)."""
    found: dict[str, list[TableInfo]] = {}
    for table in catalog.tables:
        if table.lookalike_of:
            found.setdefault(table.lookalike_of, []).append(table)
    families = []
    for name, copies in found.items():
        canonical = catalog.table(name)
        if canonical is not None:
            reason = copies[0].lookalike_evidence.partition(": ")[2]
            families.append(Family(canonical, tuple(copies), reason))
    return families


def describe_families(catalog: Catalog, *, shown: int = 6) -> list[str]:
    """Each family in one line: the table questions are linked to, why, and its copies
    (what ``tandem sql-check`` prints)."""
    lines = []
    for family in families_of(catalog):
        names = [t.qualified for t in family.lookalikes]
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(
            f"look-alikes of {family.canonical.qualified} ({family.reason}): "
            f"{', '.join(names[:shown])}{more}"
        )
    return lines
