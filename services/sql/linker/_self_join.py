"""A row named after the words of a reference to its own table, read as the row referred to.

A table that refers to itself (``employees.reports_to`` holds another employee's key)
relates two rows of one table, and the word order says which one a named value picks:
in "who reports to Andrew Fuller?" the name follows the reference's own words, so Andrew
Fuller is the row ``reports_to`` points at and the rows asked are the ones pointing at
him. The readers never join a table to itself, so as asked the name filters the rows
answered (Fuller's own row, shown through his ``reports_to``), which the verifier refuses
(``verify._self_reference``). This reading takes that statement and says it the way the
words do: the table joined to itself through the reference (``m.<referred> =
e.<reference>``), the named value compared on the referred row ``m``, and, where the
statement showed only the reference column the words named, the referring rows shown by
their key and the columns that name them. Nothing here is of one schema: the reference
is any single-column reference from a table to itself, declared or inferred (the
catalog's read joins), its words its column's name part by part, and the value one the
as-asked reading already placed in a column of that table. A shape other than this one
(a value before the words, the referred row's columns asked for) is left to the
refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.linker._plan import grouped_labels
from services.sql.words import name_words, stem

_LEAD = r"\s+(?:the\s+|a\s+|an\s+)?"


@dataclass(frozen=True)
class SelfReference:
    """A single-column reference from ``table``'s rows to its own: ``child`` holds the
    ``parent`` key of another row."""

    table: str
    child: str
    parent: str


@dataclass(frozen=True)
class SelfJoined:
    """The statement said through the reference, and the sentence that says so."""

    sql: str
    note: str


def self_references(catalog: Catalog) -> list[SelfReference]:
    """Each single-column reference from a table to its own rows: declared, or among the
    catalog's read joins (the join graph leaves these out: a path never runs through
    them)."""
    found: list[SelfReference] = []
    for table in catalog.tables:
        for fk in table.foreign_keys:
            parent = catalog.table(fk.referenced_table)
            if (
                parent is not None
                and parent.qualified == table.qualified
                and len(fk.columns) == 1
                and len(fk.referenced_columns) == 1
            ):
                found.append(
                    SelfReference(table.qualified, fk.columns[0], fk.referenced_columns[0])
                )
    for join in catalog.joins or ():
        if join.child == join.parent and len(join.child_columns) == 1:
            one = SelfReference(join.child, join.child_columns[0], join.parent_columns[0])
            if one not in found:
                found.append(one)
    return found


def said_after(low: str, column: str) -> list[str]:
    """The question's text right after each place it says the column's name, part by
    part, each by its stem ("reports to" / "report to" for ``reports_to``)."""
    parts = [stem(p) for p in name_words(column)]
    if not parts:
        return []
    said = r"\b" + r"\s+".join(re.escape(p) + r"\w*" for p in parts) + _LEAD
    return [low[m.end() :] for m in re.finditer(said, low)]


def self_joined(catalog: Catalog, low: str, sql: str) -> SelfJoined | None:
    """``sql`` (the question ``low`` read as asked, unchecked) with the values said after
    a self-reference's words compared on the row referred to; None when it compares none
    of them on its rows, or already joins the table to itself."""
    for ref in self_references(catalog):
        after = said_after(low, ref.child)
        if not after:
            continue
        table = catalog.table(ref.table)
        if table is None:
            continue
        joined = _rejoined(sql, table, ref, after)
        if joined is not None:
            return joined
    return None


def _rejoined(
    sql: str, table: TableInfo, ref: SelfReference, after: list[str]
) -> SelfJoined | None:
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    aliases = [
        t.alias_or_name
        for t in tree.find_all(exp.Table)
        if t.find_ancestor(exp.Select) is tree and _is(t, table)
    ]
    if len(aliases) != 1:
        return None  # not read, or already joined to itself: nothing to say otherwise
    alias = aliases[0]
    named = _named_after(tree, alias, after)
    if not named:
        return None
    referred = _free_alias(tree)
    for col in named:
        col.set("table", exp.to_identifier(referred))
    tree = _joined_to_referred(tree, table, ref, alias, referred)
    _shown_as_rows(tree, table, ref, alias)
    values = " ".join(f"'{v}'" for v in dict.fromkeys(_literals(named)))
    note = (
        f"Read {values} as the {table.name} row {ref.child} refers to: "
        f"{table.name} whose {ref.child} is that row."
    )
    return SelfJoined(tree.sql(dialect="postgres"), note)


def _free_alias(tree: exp.Select) -> str:
    """The first ``tN`` no table of the statement is called."""
    used = {t.alias_or_name for t in tree.find_all(exp.Table)}
    return next(f"t{i}" for i in range(len(used) + 1) if f"t{i}" not in used)


def _joined_to_referred(
    tree: exp.Select, table: TableInfo, ref: SelfReference, alias: str, other: str
) -> exp.Select:
    """``tree`` (a copy) with ``table`` joined once more as ``other``, the row
    ``alias``'s reference points at (``other.parent = alias.child``)."""
    return tree.join(
        exp.Table(
            this=exp.to_identifier(table.name),
            db=exp.to_identifier(table.schema),
            alias=exp.TableAlias(this=exp.to_identifier(other)),
        ),
        on=exp.EQ(
            this=exp.column(ref.parent, table=other),
            expression=exp.column(ref.child, table=alias),
        ),
    )


def _is(node: exp.Table, table: TableInfo) -> bool:
    return node.name.lower() == table.name.lower() and (
        not node.db or node.db.lower() == table.schema.lower()
    )


def _named_after(tree: exp.Select, alias: str, after: list[str]) -> list[exp.Column]:
    """The columns of ``alias`` the outer WHERE compares (``=``) with a string that, with
    the others so compared, is one name said right after the reference's words: one of
    them begins the text, the rest follow among its next words ("Andrew Fuller")."""
    where = tree.args.get("where")
    if where is None:
        return []
    compared: list[tuple[exp.Column, list[str]]] = []
    for eq in where.find_all(exp.EQ):
        if eq.find_ancestor(exp.Select) is not tree:
            continue
        col, lit = eq.this, eq.expression
        if isinstance(lit, exp.Column) and isinstance(col, exp.Literal):
            col, lit = lit, col
        if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal)):
            continue
        if lit.is_string and col.table == alias and (words := _words(lit.this)):
            compared.append((col, words))
    for text in after:
        said = _words(text)
        starts = [c for c, w in compared if said[: len(w)] == w]
        if not starts:
            continue
        span = sum(len(w) for _, w in compared)
        near = [c for c, w in compared if _within(w, said[:span])]
        return near
    return []


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _within(words: list[str], said: list[str]) -> bool:
    n = len(words)
    return any(said[i : i + n] == words for i in range(len(said) - n + 1))


def _literals(cols: list[exp.Column]) -> list[str]:
    out: list[str] = []
    for col in cols:
        eq = col.parent
        if isinstance(eq, exp.EQ):
            other = eq.expression if eq.this is col else eq.this
            if isinstance(other, exp.Literal):
                out.append(other.this.strip())
    return out


def _shown_as_rows(tree: exp.Select, table: TableInfo, ref: SelfReference, alias: str) -> None:
    """Where the statement shows the reference column itself (what the words named when
    read as a column), the referring rows are shown instead: their key and the columns
    that name them."""
    shown = tree.expressions
    kept = [e for e in shown if not _is_reference(e, ref, alias)]
    if len(kept) == len(shown):
        return
    columns = [c.column.name for c in grouped_labels(table)]
    key = list(table.primary_key[:1])
    names = [n for n in dict.fromkeys([*key, *columns]) if n != ref.child]
    added = [exp.column(n, table=alias).as_(n) for n in names]
    tree.set("expressions", [*added, *kept])


def _is_reference(node: exp.Expr, ref: SelfReference, alias: str) -> bool:
    inner = node.this if isinstance(node, exp.Alias) else node
    return isinstance(inner, exp.Column) and inner.name == ref.child and inner.table == alias


# "the person they report to": a noun, then the referring row as a pronoun subject, then
# the reference's words with nothing after them (the object gap is the referred row). The
# pronouns and "the name(s) of" are English grammar, the one word list here.
_GAP = (
    r"(?:the|a|an)\s+(\w+)\s+(?:whom?\s+|that\s+)?(?:they|he|she|it)\s+"
    r"(?:(?:are|is|was|were)\s+)?"
)
_SHOWN = r"(?:\b(?:with|and)\s+)?(?:(?:the\s+)?names?\s+of\s+)?"


@dataclass(frozen=True)
class Referred:
    """A question that asks for the row a self-reference refers to beside each referring
    row: the question without the phrase (``rest``), the reference, and the noun the
    phrase named the referred row by (``noun``, explained by the join)."""

    rest: str
    ref: SelfReference
    noun: str


def referred_asked(catalog: Catalog, question: str) -> Referred | None:
    """ "list each employee with the name of the person they report to": the phrase that
    names the row the reference points at (a noun whose clause ends on the reference's
    words, its object gap) taken out of the question, or None where no such phrase is
    said."""
    low = question.lower()
    for ref in self_references(catalog):
        parts = [stem(p) for p in name_words(ref.child)]
        if not parts:
            continue
        words = r"\s+".join(re.escape(p) + r"\w*" for p in parts)
        found = re.search(r"\b" + _SHOWN + _GAP + words + r"\b", low)
        if found is None:
            continue
        rest = " ".join(f"{question[: found.start()]} {question[found.end() :]}".split())
        return Referred(rest, ref, found.group(1))
    return None


def referred_shown(catalog: Catalog, referred: Referred, sql: str) -> SelfJoined | None:
    """The listing ``sql`` (the question without the phrase, unchecked) with the table
    joined to the rows it refers to and their names shown after its own columns. Only a
    listing of the table's rows (no count, no group: the referred row's names would need
    grouping by, and a count would lose the rows without one). The join is inner: "the
    person they report to" presumes one, and a row without one (the head of the
    hierarchy) is left out, as the interpretation says."""
    table = catalog.table(referred.ref.table)
    if table is None:
        return None
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("group") or tree.args.get("distinct"):
        return None
    if any(isinstance(e, exp.AggFunc) for s in tree.expressions for e in s.walk()):
        return None
    aliases = [
        t.alias_or_name
        for t in tree.find_all(exp.Table)
        if t.find_ancestor(exp.Select) is tree and _is(t, table)
    ]
    if len(aliases) != 1:
        return None
    alias = aliases[0]
    ref = referred.ref
    other = _free_alias(tree)
    tree = _joined_to_referred(tree, table, ref, alias, other)
    names = [c.column.name for c in grouped_labels(table)] or list(table.primary_key[:1])
    if not names:
        return None
    shown = [exp.column(n, table=other).as_(f"{ref.child}_{n}") for n in names]
    tree.set("expressions", [*tree.expressions, *shown])
    note = (
        f"Read '{referred.noun}' as the {table.name} row {ref.child} refers to, shown "
        f"by {', '.join(names)}; rows whose {ref.child} is empty are not listed."
    )
    return SelfJoined(tree.sql(dialect="postgres"), note)


def referred_aliases(select: exp.Select, catalog: Catalog) -> set[str]:
    """The aliases a statement joins as the row another alias of the same table refers
    to through a self-reference (``t1`` of ``JOIN employees AS t1 ON t1.employee_id =
    t0.reports_to``): the answer's rows are the referring ones, and a follow-up's
    condition on the table ("only the ones based in London") is about them, not about
    the row each refers to."""
    refs = {(r.table, r.child, r.parent) for r in self_references(catalog)}
    if not refs:
        return set()
    tables: dict[str, str] = {}
    for join in [select.args.get("from_"), *(select.args.get("joins") or ())]:
        node = join.this if join is not None else None
        if isinstance(node, exp.Table):
            info = table_for(catalog, node)
            if info is not None:
                tables[node.alias_or_name] = info.qualified
    found: set[str] = set()
    for join in select.args.get("joins") or ():
        on = join.args.get("on")
        if not isinstance(on, exp.EQ):
            continue
        left, right = on.this, on.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        for mine, other in ((left, right), (right, left)):
            table = tables.get(mine.table)
            if table is None or table != tables.get(other.table) or mine.table == other.table:
                continue
            if (table, other.name, mine.name) in refs:
                found.add(mine.table)
    return found
