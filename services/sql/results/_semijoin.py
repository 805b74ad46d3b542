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
    WHERE EXISTS (SELECT 1 FROM visit AS t1 WHERE t1.museum_id = t0.museum_id)

Only where the rewrite keeps the rows: a DISTINCT that only undoes its joins' repeats
(``_labels.distinct_through_joins``) and whose rows are told apart by the table's key
(shown, or added by the label rule), or joins that each match one row by its whole key
(a document's one template: they repeat nothing). A DISTINCT of values asked (a kind the
rows fall in, a table with no key), an outer or non-equality join, a self-join (which
alias's rows are listed is not the table's to say), or a column, aggregate, group or
order from a joined table is left as composed.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import Catalog
from services.sql.results._labels import distinct_through_joins, label_columns, repeats
from services.sql.results._select import edited, own_tables
from services.sql.tree import conjuncts


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


def _and(parts: list[exp.Expr]) -> exp.Expr:
    return exp.and_(*parts) if len(parts) > 1 else parts[0]


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
    sub = exp.Select(expressions=[exp.Literal.number(1)])
    first, first_on = inner[0]
    sub.set("from_", exp.From(this=first.copy()))
    for table, on in inner[1:]:
        if on:
            sub.append("joins", exp.Join(this=table.copy(), on=_and([p.copy() for p in on])))
        else:
            sub.append("joins", exp.Join(this=table.copy(), kind="CROSS"))
    tests = [*(p.copy() for p in first_on), *(p.copy() for p in correlated)]
    sub.set("where", exp.Where(this=_and([*tests, *(c.copy() for c in within)])))
    kept = [c.copy() for c in outside]
    select.set("joins", None)
    select.set("distinct", None)
    select.set("group", None)
    select.set("having", None)
    select.set("where", exp.Where(this=_and([*kept, exp.Exists(this=sub)])))
    return True


def with_semijoins(sql: str, catalog: Catalog) -> str:
    """``sql`` with joins that only restrict its listed rows written as ``EXISTS``
    (unchanged text when :func:`semi_join` does not apply)."""
    return edited(sql, lambda select: semi_join(select, catalog))
