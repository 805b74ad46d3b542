"""Values a statement builds: bounded before the statement reaches the database.

Postgres bounds a statement's time (the statement timeout) and, through ``work_mem`` and
``temp_file_limit``, what its sorts and hashes hold; nothing bounds one value. ``SELECT
length(repeat('x', 900000000))`` passes every other rule, returns one small number and
has one backend hold 900 MB while computing it; a taught pair asked by every user of a
tenant does so on every ask. So the gate reads the statement for the functions that make a
value larger than what went in, and bounds what each can make from what the tree shows.

The bound is the largest result the service could ever return (the result-size cap,
1 MiB by default): a value built larger than that could never be shown, so building it
is never what a question needs. The rules, each from what the statement itself says:

- ``repeat(s, n)``, ``lpad``/``rpad(s, n)`` and ``format`` widths need constant counts
  (a count read from data is unbounded) and the value they make must fit. A stored
  value repeated is counted as ``STORED_VALUE_CHARS`` characters.
- ``generate_series`` with constant bounds makes at most the cap in rows (a series from
  data is bounded by the data, the statement timeout and ``temp_file_limit``).
- ``string_agg``, ``array_agg``, ``json(b)_agg`` and ``json(b)_object_agg`` build at
  most the cap: the rows the tree guarantees (a series' length, a VALUES list's, a table
  counted as one row since its filters and groups cannot be weighed; their product
  across FROM and derived tables) times the width the tree guarantees each aggregated
  value (its constants and built parts). A stored value aggregated as it is stays the
  data's own size, which the gate cannot see (a cross join of large tables aggregated is
  bounded only by the statement timeout).
- ``replace``/``regexp_replace`` of constants, and concatenations (``||``, ``concat``) of
  built values: at most the cap.
- A recursive query may not grow a value from itself (``s || s``, ``repeat(s, 2)``):
  doubling per step reaches a gigabyte in thirty steps, well inside any timeout.

Widths are characters of the value's text; the cap is in bytes of the encoded result,
so a multi-byte value is counted low by at most four, which the execution layer's
measured result cap (see ``_execute``) still catches for what is returned.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from sqlglot import exp

# How wide a value read from the data is taken to be where the statement repeats it:
# the gate cannot see stored values, and a kilobyte covers the names, codes and
# descriptions analytical questions repeat.
STORED_VALUE_CHARS = 1024

_AGGREGATES_BY_NAME = frozenset({"json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg"})
_AGGREGATE_TYPES: tuple[type[exp.Expr], ...] = tuple(
    cls
    for cls in (
        getattr(exp, name, None)
        for name in ("GroupConcat", "ArrayAgg", "JSONArrayAgg", "JSONBObjectAgg", "JSONObjectAgg")
    )
    if cls is not None
)
_FORMAT_WIDTH = re.compile(r"%(?:\d+\$)?[-]?(\*|\d+)")
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$")
_SECONDS = {
    "microsecond": 1e-6, "millisecond": 1e-3, "second": 1.0, "minute": 60.0,
    "hour": 3600.0, "day": 86400.0, "week": 604800.0, "month": 28 * 86400.0,
    "year": 365 * 86400.0,
}  # fmt: skip


class BuiltValues:
    """Reads one statement for values built past ``limit``; ``problems`` yields
    ``(function name, message)`` for each function that could build one."""

    def __init__(self, limit: int) -> None:
        self.limit = max(int(limit), 1)

    def problems(self, tree: exp.Expr) -> Iterator[tuple[str, str]]:
        for node in tree.walk():
            found = self._node(node)
            if found is not None:
                yield found
        yield from self._recursive_growth(tree)

    def _node(self, node: exp.Expr) -> tuple[str, str] | None:
        if isinstance(node, exp.Repeat):
            return self._repeat(node)
        if isinstance(node, exp.Pad):
            name = "lpad" if node.args.get("is_left") else "rpad"
            size = _constant(node.expression)
            if size is None:
                return name, f"{name}'s length must be a constant number"
            return self._over(name, size)
        if isinstance(node, exp.Format):
            return self._format(node)
        if isinstance(node, exp.ExplodingGenerateSeries | exp.GenerateSeries):
            steps = _series_steps(node)
            if steps is not None and steps > self.limit:
                return (
                    "generate_series",
                    f"generate_series would make {steps:,} rows; at most {self.limit:,}",
                )
            return None
        if isinstance(node, exp.Replace | exp.RegexpReplace):
            source = self.width(node.this)
            replacement = self.width(node.args.get("replacement") or node.args.get("expression"))
            if source is not None and replacement is not None:
                return self._over(node.sql_name().lower(), source * max(replacement, 1))
            return None
        if _is_aggregate(node):
            return self._aggregate(node)
        if isinstance(node, exp.DPipe | exp.Concat | exp.ConcatWs) and not isinstance(
            node.parent, exp.DPipe
        ):
            # the whole chain once: each repeat within the cap, twenty of them joined not
            size = self.width(node)
            return None if size is None else self._over("concatenation", size)
        return None

    def _over(self, name: str, size: int) -> tuple[str, str] | None:
        if size > self.limit:
            return (
                name,
                f"{name} would build a value of {size:,} characters; "
                f"at most {self.limit:,} (the result-size cap)",
            )
        return None

    def _repeat(self, node: exp.Repeat) -> tuple[str, str] | None:
        times = _constant(node.args.get("times"))
        if times is None:
            return "repeat", "repeat's count must be a constant number"
        width = self.width(node.this)
        return self._over(
            "repeat", max(times, 0) * (STORED_VALUE_CHARS if width is None else width)
        )

    def _format(self, node: exp.Format) -> tuple[str, str] | None:
        pattern = node.this
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return "format", "format's pattern must be a constant string"
        widest = 0
        for width in _FORMAT_WIDTH.findall(str(pattern.this)):
            if width == "*":
                return "format", "format's widths must be constants (no *)"
            widest = max(widest, int(width))
        return self._over("format", widest)

    def _aggregate(self, node: exp.Expr) -> tuple[str, str] | None:
        select = node.find_ancestor(exp.Select)
        rows = self.rows(select) if select is not None else None
        if rows is None:
            return None
        # ``string_agg(v, sep ORDER BY ...)`` holds its value inside the ORDER BY node
        value = node.this.this if isinstance(node.this, exp.Order) else node.this
        parts = [value, *(node.expressions or []), node.args.get("separator")]
        widths = [self.width(p) for p in parts if isinstance(p, exp.Expr)]
        if any(w is None for w in widths):
            return None
        name = _function_name(node)
        return self._over(name, rows * (sum(w or 0 for w in widths) + 1))

    # --- what the tree shows of widths and row counts ------------------------------

    def width(self, node: exp.Expr | None) -> int | None:
        """Characters the tree guarantees ``node``'s value has (its constants and what
        builders make of them; a part read from data counts nothing, a stored value
        repeated counts ``STORED_VALUE_CHARS``); None when the tree guarantees nothing
        (data alone, or a function that can shrink what it is given, such as md5)."""
        if node is None:
            return 0
        if isinstance(node, exp.Literal):
            return len(str(node.this))
        if isinstance(node, exp.Null):
            return 0
        if isinstance(node, exp.Boolean):
            return 4
        if isinstance(node, exp.Paren | exp.Cast | exp.Alias | exp.TryCast):
            return self.width(node.this)
        if isinstance(node, exp.DPipe):
            return _at_least(self.width(node.this), self.width(node.expression))
        if isinstance(node, exp.Concat | exp.ConcatWs):
            total: int | None = None
            for part in node.expressions:
                total = _at_least(total, self.width(part))
            return total
        if isinstance(node, exp.Repeat):
            times = _constant(node.args.get("times"))
            inner = self.width(node.this)
            if times is None:
                return None
            return max(times, 0) * (STORED_VALUE_CHARS if inner is None else inner)
        if isinstance(node, exp.Pad):
            return _constant(node.expression)
        if isinstance(node, exp.Column):
            return self._column_width(node)
        if isinstance(node, _KEEPS_SIZE):
            return self.width(node.this)
        return None

    def _column_width(self, column: exp.Column) -> int | None:
        """A column of a derived table or CTE made from constants: its projection's width."""
        select = column.find_ancestor(exp.Select)
        if select is None:
            return None
        for source in _sources(select):
            query = _source_query(source)
            if not isinstance(query, exp.Select):
                continue
            for projection in query.expressions:
                if projection.alias_or_name == column.name:
                    return self.width(projection)
        return None

    def rows(self, select: exp.Select, depth: int = 0) -> int | None:
        """Rows ``select`` reads at most, when every source is made of constants."""
        if depth > 8:
            return None
        limit = _constant(select.args.get("limit") and select.args["limit"].expression)
        total = 1
        for source in _sources(select):
            count = self._source_rows(source, depth)
            if count is None:
                return None if limit is None else limit
            total *= count
        return total if limit is None else min(total, limit)

    def _source_rows(self, source: exp.Expr, depth: int) -> int | None:
        inner = source.this if isinstance(source, exp.Table) else source
        if isinstance(inner, exp.ExplodingGenerateSeries | exp.GenerateSeries):
            return _series_steps(inner)
        if isinstance(inner, exp.Values):
            return len(inner.expressions)
        query = _source_query(source)
        if isinstance(query, exp.Select):
            return self.rows(query, depth + 1)
        if query is None and isinstance(source, exp.Table) and isinstance(inner, exp.Identifier):
            # A table counts as one row: its filters and groups, which the gate cannot
            # weigh, may leave an aggregate no more; the product stays a floor of what
            # each group reads (a series beside a table is still counted in full).
            return 1
        return None

    def _recursive_growth(self, tree: exp.Expr) -> Iterator[tuple[str, str]]:
        for with_ in tree.find_all(exp.With):
            if not with_.args.get("recursive"):
                continue
            for cte in with_.expressions:
                name = cte.alias_or_name
                body = cte.this
                if not isinstance(body, exp.Union):
                    continue
                step = body.expression
                numbers = _numeric_columns(cte, body.this)
                for grower in step.find_all(exp.DPipe, exp.Concat, exp.ArrayConcat, exp.Repeat):
                    if _self_references(grower, step, name, numbers) >= (
                        1 if isinstance(grower, exp.Repeat) else 2
                    ):
                        yield (
                            "recursive query",
                            "a recursive query may not build a value from itself at each step",
                        )
                        return


def _is_aggregate(node: exp.Expr) -> bool:
    if isinstance(node, _AGGREGATE_TYPES):
        return True
    return isinstance(node, exp.Anonymous) and str(node.name).lower() in _AGGREGATES_BY_NAME


def _function_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return {
        "GroupConcat": "string_agg",
        "ArrayAgg": "array_agg",
        "JSONArrayAgg": "json_agg",
        "JSONBObjectAgg": "jsonb_object_agg",
        "JSONObjectAgg": "json_object_agg",
    }.get(type(node).__name__, type(node).__name__.lower())


def _at_least(a: int | None, b: int | None) -> int | None:
    """The sum of two guaranteed widths, a part with none counting nothing."""
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


# Functions whose value is as long as their first argument's (case, a character map,
# order): a built value wrapped in one is still counted.
_KEEPS_SIZE: tuple[type[exp.Expr], ...] = tuple(
    cls
    for cls in (
        getattr(exp, name, None) for name in ("Upper", "Lower", "Initcap", "Reverse", "Translate")
    )
    if cls is not None
)


def _constant(node: object) -> int | None:
    """An integer the tree states outright (a literal, or arithmetic of literals)."""
    if isinstance(node, exp.Paren | exp.Cast):
        return _constant(node.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(float(str(node.this)))
        except (ValueError, OverflowError):
            return None
    if isinstance(node, exp.Neg):
        value = _constant(node.this)
        return None if value is None else -value
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        left, right = _constant(node.this), _constant(node.expression)
        if left is None or right is None:
            return None
        if isinstance(node, exp.Add):
            return left + right
        return left - right if isinstance(node, exp.Sub) else left * right
    return None


def _series_steps(node: exp.Expr) -> int | None:
    """How many rows a generate_series with constant bounds makes (None from data)."""
    start, end, step = node.args.get("start"), node.args.get("end"), node.args.get("step")
    low, high = _constant(start), _constant(end)
    if low is not None and high is not None:
        by = 1 if step is None else _constant(step)
        if not by:
            return None
        return max((high - low) // by + 1, 0)
    first, last = _moment(start), _moment(end)
    seconds = _interval_seconds(step)
    if first is None or last is None or not seconds:
        return None
    return max(int((last - first).total_seconds() // seconds) + 1, 0)


def _moment(node: object) -> dt.datetime | None:
    if isinstance(node, exp.Cast):
        node = node.this
    if isinstance(node, exp.Literal) and node.is_string:
        try:
            return dt.datetime.fromisoformat(str(node.this).strip())
        except ValueError:
            return None
    return None


def _interval_seconds(node: object) -> float | None:
    if isinstance(node, exp.Cast):
        node = node.this
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        amount = node.this.this if isinstance(node.this, exp.Literal) else ""
        text = f"{amount} {unit.name if unit else ''}"
    elif isinstance(node, exp.Literal) and node.is_string:
        text = str(node.this)
    else:
        return None
    match = _INTERVAL.match(text.lower())
    if match is None or match.group(2) not in _SECONDS:
        return None
    return float(match.group(1)) * _SECONDS[match.group(2)]


def _sources(select: exp.Select) -> Iterator[exp.Expr]:
    from_ = select.args.get("from_")
    if isinstance(from_, exp.From):
        yield from_.this
    for join in select.args.get("joins") or []:
        yield join.this


def _source_query(source: exp.Expr) -> exp.Expr | None:
    """The query behind a FROM item: a subquery's, or a non-recursive CTE's it names."""
    if isinstance(source, exp.Subquery):
        return source.unnest()
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        name = source.name
        node: exp.Expr | None = source
        while node is not None:
            with_ = node.args.get("with_")
            if isinstance(with_, exp.With) and not with_.args.get("recursive"):
                for cte in with_.expressions:
                    if cte.alias_or_name == name:
                        query: exp.Expr = cte.this
                        return query
            node = node.parent
    return None


def _numeric_columns(cte: exp.CTE, anchor: exp.Expr) -> frozenset[str]:
    """The recursive CTE's columns its anchor starts as numbers: a counter written into
    a path (``path || '/' || n::text``) grows by its digits, not by itself."""
    alias = cte.args.get("alias")
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if not isinstance(anchor, exp.Select):
        return frozenset()
    numeric = set()
    for index, projection in enumerate(anchor.expressions):
        value = projection.this if isinstance(projection, exp.Alias) else projection
        if _constant(value) is not None or isinstance(value, exp.Count):
            numeric.add(names[index] if index < len(names) else projection.alias_or_name)
    return frozenset(numeric)


def _self_references(
    grower: exp.Expr, step: exp.Expr, cte: str, numbers: frozenset[str] = frozenset()
) -> int:
    """How many of ``grower``'s columns read the recursive CTE's own row (its numeric
    columns aside)."""
    own = {cte}
    for table in step.find_all(exp.Table):
        if table.name == cte and table.alias:
            own.add(table.alias)
    count = 0
    for column in grower.find_all(exp.Column):
        if column.name in numbers:
            continue
        if column.table in own or (not column.table and _only_source_is(step, cte)):
            count += 1
    return count


def _only_source_is(step: exp.Expr, cte: str) -> bool:
    tables = [t.name for t in step.find_all(exp.Table)]
    return tables == [cte]
