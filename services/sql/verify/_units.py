"""A number said with a unit is compared raw only with a column counting that unit.

"Flights with a departure delay of more than 3 hours" read as ``dep_delay > 3`` is a
confident wrong answer where the delay is kept in minutes. Word coverage cannot see it:
the comparison explains the unit (``words.units_of``). So each comparison of a column
with a number the question says in a unit is checked against what the schema and data
say of the column's unit:

- its name or comment names a unit ("delay_mins", "in minutes"), or the data or the
  database's glossary declares one (``ColumnInfo.units``): the unit said must be
  that one (another unit of its measure is first said again in it, ``linker._converted``;
  a unit of another measure, "3 pounds" of a distance in miles, is refused);
- else its extent (least and greatest stored value, ``catalog._extents``) must rule out
  every finer unit of the measure: a column whose values reach 1301 may count the 180
  minutes of "3 hours", while "7000 feet" on a column no higher than 9078 cannot be
  84000 inches. A column without a read extent is judged by its name alone.

Otherwise the question is refused naming the unit. A column declaring no unit is never
rescaled: which unit it counts is unsaid.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError
from services.sql.verify._statement import StatementNodes, column_name
from services.sql.words import finer_units, numbers_with_units, same_measure

_COMPARISONS = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ)


def check_units(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) a number said in a unit the compared column does not
    count (see the module's docstring)."""
    said = numbers_with_units(ctx.question)
    if not said:
        return
    for column, number in _compared(tree):
        for value, unit, written in said:
            if value != number:
                continue
            table = nodes.owner(column)
            info = table.column(column_name(column)) if table is not None else None
            if info is None:
                continue
            declared = info.units
            stored = {u for u in declared if same_measure(u, unit)}
            # a unit of a measure (time, length, mass) the column declares none of
            if declared and not stored and same_measure(unit, unit):
                raise LinkError(
                    f"{written!r}: {info.name} counts {'/'.join(sorted(declared))}s",
                )
            if stored:
                if unit not in stored:
                    raise LinkError(
                        f"{written!r}: {info.name} counts {'/'.join(sorted(stored))}s",
                    )
                continue
            if info.extent is None or value == 0:
                continue  # no extent read; or nothing, which is nothing in any unit
            low, high = info.extent
            for finer, many in finer_units(unit):
                if low <= value * many <= high:
                    raise LinkError(
                        f"{written!r}: which unit {info.name} counts is unsaid, and "
                        f"{value:g} {written} could be {value * many:g} {finer}s there",
                    )


def _compared(tree: exp.Expr) -> list[tuple[exp.Column, float]]:
    """Each column compared with a number (``col > 3``, ``3 < col``, BETWEEN bounds)."""
    found: list[tuple[exp.Column, float]] = []
    for node in tree.find_all(*_COMPARISONS, exp.Between):
        if isinstance(node, exp.Between):
            sides = [(node.this, node.args.get("low")), (node.this, node.args.get("high"))]
        else:
            sides = [(node.this, node.expression), (node.expression, node.this)]
        for left, right in sides:
            number = _number(right)
            if isinstance(left, exp.Column) and number is not None:
                found.append((left, number))
    return found


def _number(node: exp.Expr | None) -> float | None:
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    return None
