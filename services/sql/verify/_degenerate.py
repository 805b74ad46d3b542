"""Degenerate statements: an answer the statement itself fixes, whatever the data.

- An aggregate of a column the statement also groups by: within each group the column
  holds one value, so its MAX, MIN, AVG or SUM (of one distinct value) only repeats or
  multiplies the group's own value, never the measure asked across the rows ("the
  maximum age of singers in each country" grouped by country *and* age lists every age);
  and its ``COUNT(DISTINCT …)`` is 1 in every group, shown, kept by HAVING or ordered by
  ("How many concerts did each of the singers under 35 sing in?" read as ``HAVING
  COUNT(DISTINCT singer_id) < 35`` per singer keeps every singer: "under 35" was their
  age).
- A literal compared by equality with the very column the statement shows, and shows
  alone: every row it returns is that literal ("Which models does ford make?" read as
  ``SELECT model … WHERE model = 'ford'`` where 'ford' is stored as a model *and* as a
  maker), or with a column the statement joins to it by equality (one value). A column
  of the table's primary key is no such answer: shown, it says which rows there are.
  The value was meant of another column (the linker places it on another one that
  holds it when there is one, ``Plan.shown_alone``); a statement that still does this
  is refused naming the value.

Such a statement answers something nobody asked, whoever proposed it."""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkError
from services.sql.verify._statement import StatementNodes, column_name, conjuncts

_FOLDING = (exp.Max, exp.Min, exp.Avg, exp.Sum)


def check_aggregate_of_a_group(tree: exp.Expr) -> None:
    """Refuse a MAX/MIN/AVG/SUM, or a COUNT(DISTINCT …), over a column the same SELECT
    groups by, wherever the SELECT computes it (shown, in HAVING or in ORDER BY)."""
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is None:
            continue
        grouped = {e.sql() for e in group.expressions if isinstance(e, exp.Column)}
        places = [*select.expressions, select.args.get("having"), select.args.get("order")]
        for place in places:
            if place is None:
                continue
            for node in place.find_all(*_FOLDING, exp.Count):
                if node.find_ancestor(exp.Select) is not select:
                    continue  # a subquery's aggregate, its own grouping
                arg = node.this
                if isinstance(node, exp.Count):
                    if not isinstance(arg, exp.Distinct) or len(arg.expressions) != 1:
                        continue  # COUNT(col) counts the group's rows with a value
                    arg = arg.expressions[0]
                if isinstance(arg, exp.Column) and arg.sql() in grouped:
                    raise LinkError(
                        f"the statement takes the {node.key.upper()} of {arg.name} while "
                        f"grouping by {arg.name}: each group holds one {arg.name}"
                    )


def check_shows_its_own_literal(tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse a statement whose one output is a column its WHERE sets equal to a literal
    (an ANDed ``col = 'x'`` of the outermost SELECT, on the column or on one its joins
    set equal to it): it can only return ``'x'``. A column of its table's primary key is
    exempt: shown, it says which rows there are ("Which airports are JFK?")."""
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1:
        return
    shown = tree.expressions[0]
    shown = shown.this if isinstance(shown, exp.Alias) else shown
    where = tree.args.get("where")
    if not isinstance(shown, exp.Column) or where is None:
        return
    table = nodes.owner(shown)
    if table is not None and column_name(shown) in table.primary_key:
        return
    same = _equal_to(tree, _key(shown))
    for condition in conjuncts(where.this):
        if not isinstance(condition, exp.EQ):
            continue
        sides = (condition.this, condition.expression)
        column = next((s for s in sides if isinstance(s, exp.Column)), None)
        literal = next((s for s in sides if isinstance(s, exp.Literal)), None)
        if column is None or literal is None or _key(column) not in same:
            continue
        raise LinkError(
            f"{literal.sql(dialect='postgres')} is compared with {shown.name}, the one "
            f"column shown: the answer would only repeat it (the value names something "
            f"else, or nothing this statement reads)"
        )


def _key(column: exp.Column) -> tuple[str, str]:
    return column.table, column.name.lower()


def _equal_to(select: exp.Select, start: tuple[str, str]) -> set[tuple[str, str]]:
    """``start`` and every column the SELECT's joins and conditions set equal to it,
    directly or through another (``t1.model = t0.model``)."""
    pairs = [
        (_key(eq.this), _key(eq.expression))
        for eq in select.find_all(exp.EQ)
        if isinstance(eq.this, exp.Column)
        and isinstance(eq.expression, exp.Column)
        and eq.find_ancestor(exp.Select) is select
    ]
    same = {start}
    grown = True
    while grown:
        grown = False
        for a, b in pairs:
            if (a in same) != (b in same):
                same |= {a, b}
                grown = True
    return same
