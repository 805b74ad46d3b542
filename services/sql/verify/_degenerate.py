"""An aggregate of a column the statement also groups by: within each group the column
holds one value, so its MAX, MIN, AVG or SUM (of one distinct value) only repeats or
multiplies the group's own value, never the measure asked across the rows ("the maximum
age of singers in each country" grouped by country *and* age lists every age). Such a
statement answers something nobody asked, whoever proposed it."""

from __future__ import annotations

from sqlglot import exp

from services.sql.linker import LinkError

_FOLDING = (exp.Max, exp.Min, exp.Avg, exp.Sum)


def check_aggregate_of_a_group(tree: exp.Expr) -> None:
    """Refuse a MAX/MIN/AVG/SUM over a column the same SELECT groups by."""
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is None:
            continue
        grouped = {e.sql() for e in group.expressions if isinstance(e, exp.Column)}
        for output in select.expressions:
            for node in output.find_all(*_FOLDING):
                if node.find_ancestor(exp.Select) is not select:
                    continue  # a subquery's aggregate, its own grouping
                arg = node.this
                if isinstance(arg, exp.Column) and arg.sql() in grouped:
                    raise LinkError(
                        f"the statement takes the {node.key.upper()} of {arg.name} while "
                        f"grouping by {arg.name}: each group holds one {arg.name}"
                    )
