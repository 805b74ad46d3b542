"""A statement that joins tables only to restrict the rows of the table it shows, written
as that table's rows having a match (``EXISTS``): each row once, however many it meets.

"List the names of the museums that have a visit" is read by the linker as
``SELECT DISTINCT name FROM museum JOIN visit ON …``: the join repeats a museum once per
visit and DISTINCT undoes the repeats, but would merge two museums of one name too, so
the key was shown beside the name to keep them apart (``_labels``). The same question
reached as a follow-up ("just the ones with a visit" after "List the names of the
museums") keeps the earlier statement and adds ``WHERE EXISTS (SELECT 1 FROM visit …)``
(``conversation._semijoin``), which lists each museum once by construction and shows
what it showed. Both are the same rows of ``museum``; only the columns differed.

Where nothing of the joined tables is shown, aggregated, grouped by or ordered by, the
joins say only which rows of the first table are listed: a semi-join. Written as one,
on either path, the answer is the same statement shape and the same columns:

    SELECT t0.name FROM museum AS t0
    WHERE EXISTS (SELECT 1 FROM visit AS sj1 WHERE sj1.museum_id = t0.museum_id)

The sub-query's tables are named by the rewrite (``sj1``, …), whatever the statement
called them: the mark by which a follow-up knows an EXISTS this rewrite wrote
(:func:`joined`) from one it composed itself.

Only where the rewrite keeps the rows: a DISTINCT that only undoes its joins' repeats
(``_labels.distinct_through_joins``) and whose rows are told apart by the table's key
(shown, or added by the label rule), or joins that each match one row by its whole key
(a document's one template: they repeat nothing). A DISTINCT of values asked (a kind the
rows fall in, a table with no key), an outer or non-equality join, a self-join (which
alias's rows are listed is not the table's to say), or a column, aggregate, group or
order from a joined table is left as composed.

A follow-up reads a linked statement's tables and how they join (the rows a reference
points at are restricted through the joined table; a value swap replaces the literal a
joined table's column is compared with): :func:`joined` reads the semi-join back as the
joins it stands for, and :func:`as_asked` writes what the follow-up built on them as the
question asked outright is written, so both paths answer in one shape.
"""

from __future__ import annotations

import re
from typing import TypeVar

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog
from services.sql.results._exists import conjoined, exists
from services.sql.results._labels import (
    distinct_through_joins,
    label_columns,
    repeats,
    with_labels,
)
from services.sql.results._pairs import with_pairs
from services.sql.results._select import edited, own_tables
from services.sql.results._shown import with_edit_shown, with_shown
from services.sql.tree import conjuncts

# The aliases the rewrite gives the tables of the sub-query it writes, whatever the
# statement called them (the linker's ``t1``, a follow-up's ``f_t1``, the joins
# :func:`joined` read back): the mark by which :func:`joined` knows its own EXISTS. An
# EXISTS another writer composed (a follow-up's narrowing, a NOT EXISTS) is not one.
OWN_PREFIX = "sj"
_OWN = re.compile(rf"^{OWN_PREFIX}\d+$")


def _aliases(node: exp.Expr) -> set[str]:
    """The table aliases the columns of ``node`` are qualified by ('' for none)."""
    return {c.table.lower() for c in node.find_all(exp.Column)}


def _equalities(on: exp.Expr | None) -> list[exp.Expr] | None:
    """The conjuncts of a join's ON, when each is an equality of two qualified columns."""
    if on is None:
        return None
    parts = conjuncts(on)
    for part in parts:
        if not (
            isinstance(part, exp.EQ)
            and isinstance(part.this, exp.Column)
            and isinstance(part.expression, exp.Column)
            and part.this.table
            and part.expression.table
        ):
            return None
    return parts


def _existence(test: exp.Expr, joins: list[exp.Join]) -> bool:
    """Whether a HAVING test says only that a group has a joined row: ``COUNT(…) >= 1``
    or ``COUNT(…) > 0`` of rows (``*``), of row values (a tuple is never NULL), or of a
    column an inner join's equality holds (never NULL on a joined row)."""
    if isinstance(test, exp.GTE):
        bound = 1
    elif isinstance(test, exp.GT):
        bound = 0
    else:
        return False
    count, number = test.this, test.expression
    if (
        not isinstance(count, exp.Count)
        or not isinstance(number, exp.Literal)
        or number.is_string
        or number.this != str(bound)
    ):
        return False
    counted = count.this
    if isinstance(count.this, exp.Distinct):
        values = count.this.expressions
        counted = values[0] if len(values) == 1 else exp.Tuple(expressions=values)
    if isinstance(counted, exp.Paren):
        counted = counted.this
    if isinstance(counted, (exp.Star, exp.Tuple)):
        return True
    if not isinstance(counted, exp.Column):
        return False
    held = {
        (c.table.lower(), c.name.lower())
        for join in joins
        for part in conjuncts(join.args["on"]) if join.args.get("on") is not None
        for c in part.find_all(exp.Column)
    }  # fmt: skip
    return (counted.table.lower(), counted.name.lower()) in held


def _grouped_by_rows(select: exp.Select, alias: str, key: tuple[str, ...]) -> bool:
    """A statement grouped by its listed table's rows (their whole key among the groups,
    every group column theirs) that keeps the groups having a joined row and shows
    nothing but grouped columns: "the teachers that have at least one course
    arrangement" read as ``GROUP BY t0.teacher_id, t0.name HAVING COUNT(…) >= 1``. Its
    groups are the table's rows that have a match, each once: a semi-join."""
    group = select.args.get("group")
    having = select.args.get("having")
    if group is None or having is None:
        return False
    grouped = set()
    for column in group.expressions:
        if not isinstance(column, exp.Column) or column.table.lower() != alias:
            return False
        grouped.add(column.name.lower())
    if not {k.lower() for k in key} <= grouped:
        return False
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or column.name.lower() not in grouped:
            return False
    joins = select.args.get("joins") or []
    return all(_existence(test, joins) for test in conjuncts(having.this))


def _own_names(
    select: exp.Select, tables: list[exp.Table], conditions: list[exp.Expr]
) -> dict[str, str] | None:
    """The rewrite's own alias for each table moved into its sub-query (``sj1``, …, in
    the joins' order); None where a name is taken already (a table of the statement, or
    one a sub-query of a moved condition declares: renaming its columns would reach
    into that sub-query's own scope)."""
    names = {t.alias_or_name.lower(): f"{OWN_PREFIX}{n}" for n, t in enumerate(tables, 1)}
    taken = {t.alias_or_name.lower() for t in select.find_all(exp.Table)} - set(names)
    if set(names.values()) & taken:
        return None
    for condition in conditions:
        for query in condition.find_all(exp.Select):
            if {t.alias_or_name.lower() for t in query.find_all(exp.Table)} & set(names):
                return None
    return names


_Node = TypeVar("_Node", bound=exp.Expr)


def _renamed(node: _Node, names: dict[str, str]) -> _Node:
    """A copy of ``node`` with the tables and columns of ``names`` called by their new
    aliases."""
    node = node.copy()
    if isinstance(node, exp.Table) and node.alias_or_name.lower() in names:
        node.set("alias", exp.TableAlias(this=exp.to_identifier(names[node.alias_or_name.lower()])))
    for column in node.find_all(exp.Column):
        if column.table.lower() in names:
            column.set("table", exp.to_identifier(names[column.table.lower()]))
    return node


def semi_join(select: exp.Select, catalog: Catalog) -> bool:
    """``select`` with its restricting joins written as ``EXISTS`` (in place); whether it
    was rewritten. See the module's docstring for which statements are."""
    joins = select.args.get("joins") or []
    if (
        not isinstance(select, exp.Select)
        or not joins
        or select.args.get("qualify")
        or select.args.get("with_")
        or any(isinstance(e, exp.Star) for e in select.expressions)
        or any(e.find(exp.AggFunc, exp.Window) is not None for e in select.expressions)
    ):
        return False
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        return False
    tables = own_tables(select, catalog)
    if len(tables) != len(joins) + 1:
        return False  # a sub-query or an unknown table in the FROM: not read here
    alias, listed = next(iter(tables.items()))
    if not listed.primary_key or any(
        t.qualified == listed.qualified for a, t in tables.items() if a != alias
    ):
        return False  # no key to tell rows apart, or a self-join
    # everything shown and ordered by is the listed table's own
    if _aliases(exp.Tuple(expressions=[e.copy() for e in select.expressions])) != {alias}:
        return False
    named = {e.alias.lower() for e in select.expressions if e.alias}
    order = select.args.get("order")
    for ordered in order.expressions if order is not None else []:
        used = _aliases(ordered)
        if (
            ordered.find(exp.AggFunc) is not None
            or used - {alias, ""}
            or (
                "" in used
                and any(c.name.lower() not in named for c in ordered.find_all(exp.Column))
            )
        ):
            return False
    if select.args.get("group") or select.args.get("having"):
        if distinct is not None or not _grouped_by_rows(select, alias, listed.primary_key):
            return False
    elif distinct is not None:
        if not distinct_through_joins(select, alias, tables):
            return False
        shown = {
            e.unalias().name.lower() for e in select.expressions
            if isinstance(e.unalias(), exp.Column)
        }  # fmt: skip
        keys = {k.lower() for k in listed.primary_key}
        added = {c.name.lower() for c in label_columns(select, catalog)}
        if not keys <= shown | added:
            return False  # without its key a DISTINCT merges rows: values were asked
    elif any(repeats(join, tables) for join in joins):
        return False  # a row listed once per match: what the joins add is asked
    correlated: list[exp.Expr] = []
    inner: list[tuple[exp.Table, list[exp.Expr]]] = []
    for join in joins:
        table = join.this
        equalities = _equalities(join.args.get("on"))
        if (
            not isinstance(table, exp.Table)
            or equalities is None
            or join.args.get("side")
            or join.args.get("kind") not in (None, "", "INNER")
            or join.args.get("using")
        ):
            return False
        own = [p for p in equalities if alias not in _aliases(p)]
        correlated += [p for p in equalities if alias in _aliases(p)]
        inner.append((table, own))
    if not correlated:
        return False
    joined = set(tables) - {alias}
    outside: list[exp.Expr] = []
    within: list[exp.Expr] = []
    where = select.args.get("where")
    for condition in conjuncts(where.this) if where is not None else []:
        used = _aliases(condition)
        if "" in used:
            return False  # a column whose table is not said: which side it is on is not known
        (within if used & joined else outside).append(condition)
    renames = _own_names(select, [t for t, _ in inner], [*correlated, *within])
    if renames is None:
        return False
    inner = [(_renamed(t, renames), [_renamed(p, renames) for p in on]) for t, on in inner]
    correlated = [_renamed(p, renames) for p in correlated]
    within = [_renamed(c, renames) for c in within]
    first, first_on = inner[0]
    written = exists(first, inner[1:], [*first_on, *correlated, *within])
    kept = [c.copy() for c in outside]
    select.set("joins", None)
    select.set("distinct", None)
    select.set("group", None)
    select.set("having", None)
    select.set("where", exp.Where(this=conjoined([*kept, written])))
    return True


def with_semijoins(sql: str, catalog: Catalog) -> str:
    """``sql`` with joins that only restrict its listed rows written as ``EXISTS``
    (unchanged text when :func:`semi_join` does not apply)."""
    return edited(sql, lambda select: semi_join(select, catalog))


def _joined(select: exp.Select, catalog: Catalog) -> bool:
    """``select``'s one ``EXISTS`` (as :func:`semi_join` writes it) read back as the joins
    it stands for, a DISTINCT where a join repeats a row; in place, whether it was."""
    if select.args.get("joins") or select.args.get("group") or select.args.get("distinct"):
        return False
    source = select.args.get("from_")
    where = select.args.get("where")
    if source is None or not isinstance(source.this, exp.Table) or where is None:
        return False
    alias = source.this.alias_or_name.lower()
    parts = conjuncts(where.this)
    found = [p for p in parts if isinstance(p, exp.Exists)]
    if len(found) != 1 or not isinstance(sub := found[0].this, exp.Select):
        return False
    first = sub.args.get("from_")
    tables = [first.this if first is not None else None]
    ons: list[list[exp.Expr]] = [[]]
    for join in sub.args.get("joins") or []:
        tables.append(join.this)
        on = join.args.get("on")
        ons.append(conjuncts(on) if on is not None else [])
    if (
        [e.sql() for e in sub.expressions] != ["1"]
        or sub.args.get("where") is None
        or any(sub.args.get(k) for k in ("group", "having", "limit", "distinct"))
        or not all(isinstance(t, exp.Table) for t in tables)
    ):
        return False
    aliases = [t.alias_or_name.lower() for t in tables if t is not None]
    if alias in aliases or not all(_OWN.match(a) for a in aliases):
        return False  # not the rewrite's own: a follow-up's own semi-join stays one
    rest: list[exp.Expr] = []
    for test in conjuncts(sub.args["where"].this):
        used = _aliases(test)
        # a correlation goes to the ON of the last table it names
        if isinstance(test, exp.EQ) and alias in used and {alias} < used <= {alias, *aliases}:
            ons[max(aliases.index(a) for a in used - {alias})].append(test)
        else:
            rest.append(test)
    if any(not on for on in ons):
        return False
    # the joined tables called as the linker calls them (``sj1`` → ``t1``), where those
    # names are free: the joins as composed
    outer = {t.alias_or_name.lower() for t in select.find_all(exp.Table)} - set(aliases)
    names = {a: f"t{a[len(OWN_PREFIX) :]}" for a in aliases}
    if set(names.values()) & outer or any(
        {t.alias_or_name.lower() for t in q.find_all(exp.Table)} & set(names)
        for test in rest
        for q in test.find_all(exp.Select)
    ):
        names = {}
    joins = [
        exp.Join(this=_renamed(t, names), on=conjoined([_renamed(p, names) for p in on]))
        for t, on in zip(tables, ons, strict=True)
        if t is not None
    ]
    kept = [p.copy() for p in parts if p is not found[0]] + [_renamed(p, names) for p in rest]
    select.set("joins", joins)
    select.set("where", exp.Where(this=conjoined(kept)) if kept else None)
    if any(repeats(j, own_tables(select, catalog)) for j in joins):
        select.set("distinct", exp.Distinct())
    return True


def joined(sql: str, catalog: Catalog) -> str:
    """``sql`` with the one ``EXISTS`` :func:`with_semijoins` wrote read back as the joins
    the linker composed (a DISTINCT where a join repeats a row, the rows' key shown as a
    DISTINCT shows it: ``_labels``); unchanged text otherwise.

    What a follow-up reads from a linked statement is its tables and how they join:
    "which stadiums were they at?" restricts the concerts the stadiums are joined to to
    the earlier rows, "only those with a Pool" places the joined feature table's
    condition, "now the ones with AirCon" swaps the value it compared. Those readers
    read joins; the answer to a question asked outright keeps the semi-join."""
    written = edited(sql, lambda select: _joined(select, catalog))
    return written if written == sql else with_labels(written, catalog)


def as_asked(sql: str, asked: str, catalog: Catalog) -> str:
    """A follow-up's statement, built on the joins :func:`joined` read back, written as
    the question asked outright is: its restricting joins as a semi-join, and the listed
    rows' key shown only where ``asked`` (the statement it edits or answers beside)
    shows it or the label rule shows it (``_labels``: beside another value of theirs).
    The key :func:`joined` showed under its DISTINCT was a label of that reading only.
    Rows listed through a table of pairs from several rows a range chose show those rows'
    names first, as the question asked outright does (``_pairs``)."""
    sql = with_pairs(sql, catalog)
    written = with_semijoins(sql, catalog)
    if written == sql:
        # no semi-join to write: the earlier columns, and what the edit brought in shown
        # as the question spelled out shows it (``with_edit_shown``: a range's column)
        return with_edit_shown(sql, catalog)

    def unkeyed(select: exp.Select) -> bool:
        tables = own_tables(select, catalog)
        if not tables:
            return False
        alias, listed = next(iter(tables.items()))
        if len(listed.primary_key) != 1:
            return False
        key = listed.primary_key[0].lower()
        try:
            before = sqlglot.parse_one(asked, dialect="postgres")
        except sqlglot.errors.ParseError:
            return False
        if not isinstance(before, exp.Select) or any(
            isinstance(e.unalias(), exp.Column) and e.unalias().name.lower() == key
            for e in before.expressions
        ):
            return False
        kept = [
            e for e in select.expressions
            if not (
                isinstance(e.unalias(), exp.Column)
                and e.unalias().name.lower() == key
                and e.unalias().table.lower() == alias
            )
        ]  # fmt: skip
        if len(kept) in (0, len(select.expressions)):
            return False
        select.set("expressions", kept)
        return True

    return with_shown(edited(written, unkeyed), catalog)
