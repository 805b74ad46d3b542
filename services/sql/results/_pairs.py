"""A listing read through a table of pairs shows the rows each listed row pairs with,
where those rows are several that the question tells apart only by a range.

"What courses do the teachers older than 35 teach?" lists courses through
``course_arrange``, a table whose rows are keyed by the references they hold: each row
*is* a pair (this teacher teaches this course), the fact the table stores. Several
teachers pass a range (an age over 35), a ranking's cut or an earlier answer's rows, and
each differs from the others by more than the question says of it: the courses alone
lose which teacher teaches which, the one thing the pairs table records. So the teachers'
names are shown before the courses, one row per pair, on whichever path wrote the
statement (the question asked outright, or "what courses do they teach?" after "teachers
older than 35", which restricts the same joins to the earlier rows).

Left as composed:

- rows chosen by an equality with a stored value ("the teachers from Turton", "the
  teachers who teach Math"): every paired row shares what the question named, so the
  pair adds nothing the question did not say, and one named row is one row;
- a table joined by a key of its own (``sales`` keyed by ``id``, ``treatments`` by
  ``treatment_id``): its rows are events, many per pair, and the rows reached through
  them ("which customers bought those cars?") are the distinct rows asked for;
- the pairs table's own columns listed (a grade: its rows are the pairs already), a
  self-join (both sides one table: which side is which is not the table's to say),
  groups, aggregates, a row cut, and a side with no name column to show.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import Catalog
from services.sql.results._labels import name_columns
from services.sql.results._names import shown_column_name
from services.sql.results._select import edited, own_tables
from services.sql.tree import conjuncts

# What picks several rows that differ by more than it says: a comparison with a bound
# (each kept row has its own value), or a membership in rows chosen elsewhere (an earlier
# answer's rows, a ranking's cut), never an equality with one stated value.
_RANGES = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


def with_pairs(sql: str, catalog: Catalog) -> str:
    """``sql`` showing, before the rows it lists through a table of pairs, the names of
    the rows on the pairs' other side, where a range or earlier rows chose several of
    those (unchanged text otherwise)."""
    return edited(sql, lambda select: _paired(select, catalog))


def _paired(select: exp.Select, catalog: Catalog) -> bool:
    if (
        select.args.get("group")
        or select.args.get("having")
        or select.args.get("limit")
        or any(e.find(exp.AggFunc) is not None for e in select.expressions)
        or any(isinstance(e, exp.Star) for e in select.expressions)
        or not select.args.get("joins")
    ):
        return False
    tables = own_tables(select, catalog)
    shown = {_alias_of(e) for e in select.expressions}
    if len(shown) != 1 or "" in shown:
        return False
    listed = shown.pop()
    if listed not in tables:
        return False
    links = _links(select)
    if links is None:
        return False
    where = select.args.get("where")
    parts = conjuncts(where.this) if where is not None else []
    for pairs, ends in links.items():
        table = tables.get(pairs)
        if table is None or len(table.primary_key) < 2 or listed not in ends:
            continue
        keyed = {c.lower() for c in table.primary_key}
        if not all(set(cols) <= keyed for cols in ends.values()):
            continue  # joined by a key of its own: events, many per pair
        for other in ends:
            side = tables.get(other)
            if other == listed or side is None or side is tables[listed]:
                continue
            if not _several(parts, other):
                continue
            names = [n for n in name_columns(side) if not _shows(select, other, n)]
            if not names or len(names) != len(name_columns(side)):
                continue
            taken = {e.alias_or_name.lower() for e in select.expressions}
            shared = {n.lower() for n in names} & taken
            labels = [
                exp.column(n, table=other).as_(
                    shown_column_name(side.name, n, shared=n.lower() in shared)
                )
                for n in names
            ]
            kept = [
                e.unalias().as_(
                    shown_column_name(tables[listed].name, e.alias_or_name, shared=True)
                )
                if e.alias_or_name.lower() in shared
                else e
                for e in select.expressions
            ]
            select.set("expressions", [*labels, *kept])
            return True
    return False


def _alias_of(projection: exp.Expr) -> str:
    column = projection.unalias()
    return column.table.lower() if isinstance(column, exp.Column) else ""


def _shows(select: exp.Select, alias: str, name: str) -> bool:
    return any(
        isinstance(c, exp.Column) and c.table.lower() == alias and c.name.lower() == name.lower()
        for c in (e.unalias() for e in select.expressions)
    )


def _links(select: exp.Select) -> dict[str, dict[str, list[str]]] | None:
    """For each alias, the aliases it is joined to and its own columns in those joins'
    equalities; None where a join is not inner or not an equality of columns."""
    found: dict[str, dict[str, list[str]]] = {}
    for join in select.args.get("joins") or []:
        if join.args.get("side") or join.args.get("kind") not in (None, "", "INNER"):
            return None
        on = join.args.get("on")
        if on is None:
            return None
        for part in conjuncts(on):
            if not (
                isinstance(part, exp.EQ)
                and isinstance(part.this, exp.Column)
                and isinstance(part.expression, exp.Column)
            ):
                return None
            a, b = part.this, part.expression
            ta, tb = a.table.lower(), b.table.lower()
            if not ta or not tb or ta == tb:
                return None
            found.setdefault(ta, {}).setdefault(tb, []).append(a.name.lower())
            found.setdefault(tb, {}).setdefault(ta, []).append(b.name.lower())
    return found


def _several(parts: list[exp.Expr], alias: str) -> bool:
    """Whether the conditions on ``alias``'s rows keep several that differ by more than
    they say: a range or a membership in rows chosen elsewhere, and no equality with a
    stated value (which names what every kept row shares)."""
    ranged = False
    for said in parts:
        part = said
        while isinstance(part, exp.Paren):
            part = part.this
        if isinstance(part, exp.In) and part.args.get("query") is not None:
            target = part.this
            if isinstance(target, exp.Column) and target.table.lower() == alias:
                ranged = True
            continue
        if {c.table.lower() for c in part.find_all(exp.Column)} != {alias}:
            continue
        if isinstance(part, (exp.EQ, exp.In)):
            return False
        ranged = ranged or isinstance(part, _RANGES)
    return ranged
