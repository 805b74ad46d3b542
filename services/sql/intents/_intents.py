"""Structured intents compiled to SQL with sqlglot's builder: deterministic, no model.

An intent names a table, joins (followed along the catalog's foreign keys), columns,
filters, groups, ordering and a limit. Every name is checked against the catalog and
every operand against its column's type before anything is built; values become sqlglot
literals, never text spliced into SQL. The compiled statement is then gated and executed
like any other.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.gate import identifier
from services.sql.results import aggregate_name, period_node, shown_column_name

DEFAULT_TOP_N = 10


class IntentKind(enum.Enum):
    """Values match ``tandem.v1.IntentKind``."""

    COUNT = 1
    LIST = 2
    GROUP_BY = 3
    TOP_N = 4
    LOOKUP = 5
    AGGREGATE = 6


class Aggregate(enum.Enum):
    """Values match ``tandem.v1.AggregateFunction``."""

    UNSPECIFIED = 0
    COUNT = 1
    COUNT_DISTINCT = 2
    SUM = 3
    AVG = 4
    MIN = 5
    MAX = 6


class FilterOp(enum.Enum):
    """Values match ``tandem.v1.FilterOperator``."""

    UNSPECIFIED = 0
    EQUAL = 1
    NOT_EQUAL = 2
    LESS = 3
    LESS_OR_EQUAL = 4
    GREATER = 5
    GREATER_OR_EQUAL = 6
    IN = 7
    NOT_IN = 8
    IN_RANGE = 9
    CONTAINS = 10
    STARTS_WITH = 11
    IS_NULL = 12
    IS_NOT_NULL = 13


class TimeGrain(enum.Enum):
    """Values match ``tandem.v1.TimeGrain``."""

    NONE = 0
    DAY = 1
    WEEK = 2
    MONTH = 3
    QUARTER = 4
    YEAR = 5


@dataclass(frozen=True)
class Value:
    """A typed operand: ``kind`` is the SqlValue field it came from (``string_value``,
    ``int_value``, ``date_value``...), ``value`` the Python value."""

    kind: str
    value: object

    @classmethod
    def text(cls, value: str) -> Value:
        return cls("string_value", value)

    @classmethod
    def integer(cls, value: int) -> Value:
        return cls("int_value", value)

    @classmethod
    def decimal(cls, value: Decimal | str) -> Value:
        return cls("decimal_value", Decimal(value))

    @classmethod
    def date(cls, value: dt.date) -> Value:
        return cls("date_value", value.isoformat())

    @classmethod
    def boolean(cls, value: bool) -> Value:
        return cls("bool_value", value)


@dataclass(frozen=True)
class Filter:
    """One condition on a column (bare or ``table.column``)."""

    column: str
    op: FilterOp
    values: tuple[Value, ...] = ()


@dataclass(frozen=True)
class Group:
    """One grouping key, optionally truncated to a time grain."""

    column: str
    grain: TimeGrain = TimeGrain.NONE


@dataclass(frozen=True)
class Order:
    """One ordering key: a column, or the intent's aggregate value."""

    column: str = ""
    descending: bool = False
    by_aggregate: bool = False


@dataclass(frozen=True)
class Intent:
    """A structured question (see ``tandem.v1.SqlIntent``)."""

    kind: IntentKind | None
    table: str
    join_tables: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    group_by: tuple[Group, ...] = ()
    order_by: tuple[Order, ...] = ()
    limit: int = 0
    aggregate: Aggregate = Aggregate.UNSPECIFIED
    aggregate_column: str = ""


@dataclass(frozen=True)
class CompiledIntent:
    """The statement an intent compiles to, and a plain-language account of it."""

    sql: str
    explanation: str
    tables: tuple[str, ...] = field(default=())


class IntentError(ValueError):
    """The intent does not fit the catalog or its kind; ``field`` is the request path."""

    def __init__(self, field: str, description: str) -> None:
        super().__init__(f"{field}: {description}")
        self.field = field
        self.description = description


# --- column types --------------------------------------------------------------------

_NUMERIC = ("smallint", "integer", "bigint", "numeric", "real", "double precision", "money")
_TEXT = ("text", "character varying", "character", "citext", "name")


def type_class(data_type: str) -> str:
    """numeric | text | boolean | date | timestamp | other."""
    if data_type.endswith("[]"):
        return "other"
    if data_type.startswith(_NUMERIC):
        return "numeric"
    if data_type.startswith(_TEXT):
        return "text"
    if data_type == "boolean":
        return "boolean"
    if data_type == "date":
        return "date"
    if data_type.startswith("timestamp"):
        return "timestamp"
    return "other"


_ACCEPTS = {
    "numeric": {"int_value", "double_value", "decimal_value"},
    "text": {"string_value"},
    "boolean": {"bool_value"},
    "date": {"date_value", "string_value"},
    "timestamp": {"timestamp_value", "datetime_value", "date_value", "string_value"},
    "other": {"string_value"},
}
_ORDERED_CLASSES = {"numeric", "text", "date", "timestamp"}
# Decimal operands beyond 10^±100 are refused rather than spelled out digit by digit.
_MAX_EXPONENT = 100


# --- the compiler --------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    table: TableInfo
    column: ColumnInfo

    def node(self) -> exp.Column:
        return exp.Column(this=identifier(self.column.name), table=identifier(self.table.name))

    @property
    def label(self) -> str:
        return f"{self.table.name}.{self.column.name}"


class _Scope:
    """The tables an intent reads (main table first) and how they are joined: along the
    catalog's join graph (declared keys, the glossary's joins, inferred ones)."""

    def __init__(self, catalog: Catalog, intent: Intent) -> None:
        main = catalog.table(intent.table) if intent.table else None
        if main is None:
            raise IntentError("intent.table", "not a table in the catalog")
        self.catalog = catalog
        self.main = main
        self.tables: list[TableInfo] = [main]
        self.joins: list[tuple[TableInfo, list[tuple[_Ref, _Ref]]]] = []
        graph = JoinGraph(catalog) if intent.join_tables else None
        inside = [main.qualified]
        for index, name in enumerate(intent.join_tables):
            target = catalog.table(name)
            if target is None:
                raise IntentError(f"intent.join_tables[{index}]", "not a table in the catalog")
            assert graph is not None
            steps = graph.reach(inside, target.qualified)
            if steps is None:
                raise IntentError(f"intent.join_tables[{index}]", "not reachable by any join")
            for joined, edge in steps:
                table = catalog.table(joined)
                child, parent = catalog.table(edge.child), catalog.table(edge.parent)
                assert table is not None and child is not None and parent is not None
                condition = [
                    (_column(child, c), _column(parent, p))
                    for c, p in zip(edge.child_columns, edge.parent_columns, strict=True)
                ]
                self.tables.append(table)
                self.joins.append((table, condition))
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise IntentError("intent.join_tables", "two joined tables share a name")

    def ref(self, name: str, field: str) -> _Ref:
        """A column by ``column``, ``table.column`` or ``schema.table.column``."""
        parts = name.split(".")
        if not name or any(not p for p in parts) or len(parts) > 3:
            raise IntentError(field, "not a column name")
        column = parts[-1]
        if len(parts) > 1:
            qualifier = ".".join(parts[:-1])
            table = next((t for t in self.tables if qualifier in (t.name, t.qualified)), None)
            if table is None:
                raise IntentError(field, "names a table that is not part of the intent")
            info = table.column(column)
            if info is None:
                raise IntentError(field, "not a column of that table")
            return _Ref(table, info)
        main = self.main.column(column)
        if main is not None:
            return _Ref(self.main, main)
        matches = [(t, t.column(column)) for t in self.tables[1:] if t.column(column)]
        if not matches:
            raise IntentError(field, "not a column of the intent's tables")
        if len(matches) > 1:
            raise IntentError(field, "ambiguous; qualify it as table.column")
        table, info = matches[0]
        assert info is not None
        return _Ref(table, info)

    def from_clause(self, select: exp.Select) -> exp.Select:
        select = select.from_(_table_node(self.main))
        for table, condition in self.joins:
            on: exp.Expr | None = None
            for left, right in condition:
                clause = exp.EQ(this=left.node(), expression=right.node())
                on = clause if on is None else exp.and_(on, clause)
            select = select.join(_table_node(table), on=on, join_type="INNER")
        return select


def _column(table: TableInfo, name: str) -> _Ref:
    info = table.column(name)
    if info is None:
        info = ColumnInfo(name, "unknown", True)
    return _Ref(table, info)


def _table_node(table: TableInfo) -> exp.Table:
    return exp.Table(this=identifier(table.name), db=identifier(table.schema))


def compile_intent(intent: Intent, catalog: Catalog, *, row_cap: int) -> CompiledIntent:
    """The SELECT for ``intent``; raises :class:`IntentError` naming the offending field."""
    if intent.kind is None:
        raise IntentError("intent.kind", "required")
    if intent.limit < 0:
        raise IntentError("intent.limit", "must not be negative")
    scope = _Scope(catalog, intent)
    where = [_filter(scope, f, i) for i, f in enumerate(intent.filters)]
    parts = _Explainer(scope, intent)
    kind = intent.kind
    if kind is IntentKind.COUNT:
        select = exp.select(_count_rows(scope).as_("count"))
    elif kind is IntentKind.AGGREGATE:
        if intent.aggregate is Aggregate.UNSPECIFIED:
            raise IntentError("intent.aggregate_function", "required for AGGREGATE")
        agg, alias = _aggregate(scope, intent)
        select = exp.select(agg.as_(alias))
    elif kind is IntentKind.GROUP_BY:
        select = _group_select(scope, intent)
    else:
        select = _row_select(scope, intent)
    select = scope.from_clause(select)
    for condition in where:
        select = select.where(condition)
    limit = _limit(intent, row_cap)
    if limit is not None:
        select = select.limit(limit)
    sql = select.sql(dialect="postgres")
    return CompiledIntent(sql, parts.text(limit), tuple(t.qualified for t in scope.tables))


def _count_rows(scope: _Scope) -> exp.Expression:
    pk = scope.main.primary_key
    if scope.joins and len(pk) == 1:
        # Joins can repeat a row of the main table; count the main table's rows once.
        return exp.Count(this=exp.Distinct(expressions=[_column(scope.main, pk[0]).node()]))
    return exp.Count(this=exp.Star())


def _aggregate(scope: _Scope, intent: Intent) -> tuple[exp.Expression, str]:
    function = intent.aggregate
    if function is Aggregate.UNSPECIFIED:
        function = Aggregate.COUNT
    if not intent.aggregate_column:
        if function is not Aggregate.COUNT:
            raise IntentError("intent.aggregate_column", "required for this aggregate function")
        return _count_rows(scope), aggregate_name("COUNT")
    ref = scope.ref(intent.aggregate_column, "intent.aggregate_column")
    klass = type_class(ref.column.data_type)
    node = ref.node()
    if function in (Aggregate.SUM, Aggregate.AVG) and klass != "numeric":
        raise IntentError("intent.aggregate_column", "SUM and AVG need a numeric column")
    if function in (Aggregate.MIN, Aggregate.MAX) and klass not in _ORDERED_CLASSES:
        raise IntentError("intent.aggregate_column", "MIN and MAX need an ordered column")
    built: dict[Aggregate, exp.Expression] = {
        Aggregate.COUNT: exp.Count(this=node),
        Aggregate.COUNT_DISTINCT: exp.Count(this=exp.Distinct(expressions=[node])),
        Aggregate.SUM: exp.Sum(this=node),
        Aggregate.AVG: exp.Avg(this=node),
        Aggregate.MIN: exp.Min(this=node),
        Aggregate.MAX: exp.Max(this=node),
    }
    return built[function], aggregate_name(function.name, ref.column.name)


_GRAIN_UNITS = {
    TimeGrain.DAY: "day",
    TimeGrain.WEEK: "week",
    TimeGrain.MONTH: "month",
    TimeGrain.QUARTER: "quarter",
    TimeGrain.YEAR: "year",
}


def _group_select(scope: _Scope, intent: Intent) -> exp.Select:
    if not intent.group_by:
        raise IntentError("intent.group_by", "required for GROUP_BY")
    keys: list[tuple[exp.Expression, str]] = []
    for index, group in enumerate(intent.group_by):
        ref = scope.ref(group.column, f"intent.group_by[{index}].column")
        node: exp.Expression = ref.node()
        alias = ref.column.name
        if group.grain is not TimeGrain.NONE:
            if type_class(ref.column.data_type) not in ("date", "timestamp"):
                raise IntentError(
                    f"intent.group_by[{index}].time_grain", "needs a date or timestamp column"
                )
            unit = _GRAIN_UNITS[group.grain]
            node = period_node(unit, node)
            if group.grain is not TimeGrain.YEAR:  # a first day, without a time of day
                node = exp.Cast(this=node, to=exp.DataType.build("date"))
            alias = f"{ref.column.name}_{unit}"
        keys.append((node, alias))
    aliases = [a for _, a in keys]
    if len(set(aliases)) != len(aliases):
        raise IntentError("intent.group_by", "two grouping keys have the same name")
    agg, agg_alias = _aggregate(scope, intent)
    select = exp.select(*[node.as_(alias) for node, alias in keys], agg.as_(agg_alias))
    # By position: an alias could also name an input column of a joined table.
    select = select.group_by(*[exp.Literal.number(i + 1) for i in range(len(keys))])
    orders: list[exp.Ordered] = []
    for index, order in enumerate(intent.order_by):
        if order.by_aggregate:
            target: exp.Expression = exp.column(identifier(agg_alias))
        else:
            ref = scope.ref(order.column, f"intent.order_by[{index}].column")
            match = [a for (n, a) in keys if a == ref.column.name]
            if not match:
                raise IntentError(
                    f"intent.order_by[{index}].column", "GROUP_BY may order only by its keys"
                )
            target = exp.column(identifier(match[0]))
        orders.append(exp.Ordered(this=target, desc=order.descending))
    if orders:
        # The keys break ties, so "top 5" is the same five on every run.
        shown = {o.this.sql() for o in orders}
        orders += [
            exp.Ordered(this=exp.column(identifier(a)), desc=False)
            for a in aliases
            if exp.column(identifier(a)).sql() not in shown
        ]
    if not orders:
        timed = any(g.grain is not TimeGrain.NONE for g in intent.group_by)
        if timed:
            orders = [exp.Ordered(this=exp.column(identifier(a)), desc=False) for a in aliases]
        else:
            orders = [exp.Ordered(this=exp.column(identifier(agg_alias)), desc=True)]
            orders += [exp.Ordered(this=exp.column(identifier(a)), desc=False) for a in aliases]
    return select.order_by(*orders)


def _row_select(scope: _Scope, intent: Intent) -> exp.Select:
    kind = intent.kind
    if kind is IntentKind.TOP_N and not intent.order_by:
        raise IntentError("intent.order_by", "required for TOP_N")
    if kind is IntentKind.LOOKUP and not intent.filters:
        raise IntentError("intent.filters", "LOOKUP needs filters that identify the rows")
    if intent.columns:
        refs = [scope.ref(c, f"intent.columns[{i}]") for i, c in enumerate(intent.columns)]
    else:
        refs = [_Ref(scope.main, c) for c in scope.main.columns]
    names = [r.column.name for r in refs]
    projections = [
        r.node().as_(
            shown_column_name(r.table.name, r.column.name, shared=names.count(r.column.name) > 1)
        )
        for r in refs
    ]
    select = exp.select(*projections)
    orders = []
    for index, order in enumerate(intent.order_by):
        if order.by_aggregate:
            raise IntentError(f"intent.order_by[{index}].by_aggregate", "only for GROUP_BY")
        ref = scope.ref(order.column, f"intent.order_by[{index}].column")
        # NULLS LAST either way: "top 10 by amount" should not start with missing amounts.
        orders.append(exp.Ordered(this=ref.node(), desc=order.descending, nulls_first=False))
    if kind is IntentKind.TOP_N or orders:
        pk = [_column(scope.main, c) for c in scope.main.primary_key]
        ordered = {o.this.sql() for o in orders}
        # A primary-key tiebreak keeps the row order (and the fingerprint) deterministic.
        orders += [exp.Ordered(this=r.node()) for r in pk if r.node().sql() not in ordered]
        select = select.order_by(*orders)
    return select


def _limit(intent: Intent, row_cap: int) -> int | None:
    if intent.kind in (IntentKind.COUNT, IntentKind.AGGREGATE):
        return None
    if intent.limit:
        return min(intent.limit, row_cap)
    if intent.kind is IntentKind.TOP_N:
        return min(DEFAULT_TOP_N, row_cap)
    # Otherwise the row cap applies by fetching, so `truncated` can tell more existed.
    return None


def _filter(scope: _Scope, spec: Filter, index: int) -> exp.Expr:
    field = f"intent.filters[{index}]"
    ref = scope.ref(spec.column, f"{field}.column")
    klass = type_class(ref.column.data_type)
    op = spec.op
    values = spec.values
    counts = {
        FilterOp.IN: (1, None),
        FilterOp.NOT_IN: (1, None),
        FilterOp.IN_RANGE: (2, 2),
        FilterOp.IS_NULL: (0, 0),
        FilterOp.IS_NOT_NULL: (0, 0),
    }
    if op is FilterOp.UNSPECIFIED:
        raise IntentError(f"{field}.op", "required")
    low, high = counts.get(op, (1, 1))
    if len(values) < low or (high is not None and len(values) > high):
        wanted = f"{low}" if low == high else f"at least {low}"
        raise IntentError(f"{field}.values", f"{op.name} takes {wanted} value(s)")
    node = ref.node()
    if op in (FilterOp.CONTAINS, FilterOp.STARTS_WITH):
        if klass != "text" or values[0].kind != "string_value":
            raise IntentError(f"{field}.values", f"{op.name} needs a text column and a string")
        pattern = _like_escape(str(values[0].value))
        pattern = f"%{pattern}%" if op is FilterOp.CONTAINS else f"{pattern}%"
        return exp.ILike(this=node, expression=exp.Literal.string(pattern))
    if op is FilterOp.IS_NULL:
        return exp.Is(this=node, expression=exp.Null())
    if op is FilterOp.IS_NOT_NULL:
        return exp.Not(this=exp.Is(this=node, expression=exp.Null()))
    if op in (FilterOp.LESS, FilterOp.LESS_OR_EQUAL, FilterOp.GREATER, FilterOp.GREATER_OR_EQUAL,
              FilterOp.IN_RANGE) and klass not in _ORDERED_CLASSES:  # fmt: skip
        raise IntentError(f"{field}.op", f"{op.name} needs an ordered column")
    literals = [_literal(v, klass, f"{field}.values[{i}]") for i, v in enumerate(values)]
    comparisons = {
        FilterOp.EQUAL: exp.EQ,
        FilterOp.NOT_EQUAL: exp.NEQ,
        FilterOp.LESS: exp.LT,
        FilterOp.LESS_OR_EQUAL: exp.LTE,
        FilterOp.GREATER: exp.GT,
        FilterOp.GREATER_OR_EQUAL: exp.GTE,
    }
    if op in comparisons:
        return comparisons[op](this=node, expression=literals[0])
    if op is FilterOp.IN:
        return exp.In(this=node, expressions=literals)
    if op is FilterOp.NOT_IN:
        return exp.Not(this=exp.In(this=node, expressions=literals))
    return exp.and_(
        exp.GTE(this=node, expression=literals[0]), exp.LT(this=node.copy(), expression=literals[1])
    )


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _literal(value: Value, klass: str, field: str) -> exp.Expression:
    if value.kind not in _ACCEPTS[klass]:
        raise IntentError(field, f"a {value.kind} does not fit a {klass} column")
    raw = value.value
    if value.kind == "int_value" and isinstance(raw, int):
        return exp.Literal.number(raw)
    if value.kind == "decimal_value" and isinstance(raw, Decimal | str):
        number = Decimal(raw)
        if not number.is_finite() or abs(number.adjusted()) > _MAX_EXPONENT:
            raise IntentError(field, "must be a finite number of reasonable size")
        return exp.Literal.number(format(number, "f"))
    if value.kind == "double_value" and isinstance(raw, float):
        if not math.isfinite(raw):
            raise IntentError(field, "must be a finite number")
        return exp.Literal.number(repr(raw))
    if value.kind == "bool_value" and isinstance(raw, bool):
        return exp.Boolean(this=raw)
    if value.kind == "timestamp_value" and isinstance(raw, dt.datetime):
        return _cast(raw.isoformat(), "timestamptz")
    if value.kind == "datetime_value" and isinstance(raw, str):
        _parse_datetime(raw, field)
        return _cast(raw, "timestamp")
    if value.kind == "date_value" and isinstance(raw, str):
        _parse_date(raw, field)
        return _cast(raw, "date")
    if value.kind == "string_value" and isinstance(raw, str):
        if klass == "date":
            _parse_date(raw, field)
            return _cast(raw, "date")
        if klass == "timestamp":
            _parse_datetime(raw, field)
            return _cast(raw, "timestamptz")
        return exp.Literal.string(raw)
    raise IntentError(field, "value of an unsupported type")


def _cast(text: str, type_name: str) -> exp.Expression:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build(type_name))


def _parse_date(raw: str, field: str) -> None:
    try:
        dt.date.fromisoformat(raw)
    except ValueError:
        raise IntentError(field, "not an ISO date (YYYY-MM-DD)") from None


def _parse_datetime(raw: str, field: str) -> None:
    try:
        dt.datetime.fromisoformat(raw)
    except ValueError:
        raise IntentError(field, "not an ISO timestamp") from None


_OP_WORDS = {
    FilterOp.EQUAL: "is",
    FilterOp.NOT_EQUAL: "is not",
    FilterOp.LESS: "is below",
    FilterOp.LESS_OR_EQUAL: "is at most",
    FilterOp.GREATER: "is above",
    FilterOp.GREATER_OR_EQUAL: "is at least",
    FilterOp.IN: "is one of",
    FilterOp.NOT_IN: "is none of",
    FilterOp.IN_RANGE: "is in",
    FilterOp.CONTAINS: "contains",
    FilterOp.STARTS_WITH: "starts with",
    FilterOp.IS_NULL: "is empty",
    FilterOp.IS_NOT_NULL: "is set",
}


class _Explainer:
    """A one-paragraph plain-language account of an intent."""

    def __init__(self, scope: _Scope, intent: Intent) -> None:
        self._scope = scope
        self._intent = intent

    def text(self, limit: int | None) -> str:
        intent = self._intent
        main = self._scope.main.name
        joined = [t.name for t in self._scope.tables[1:]]
        if joined:
            main += " (joined with " + ", ".join(joined) + ")"
        kind = intent.kind
        agg = intent.aggregate.name.lower().replace("_", " ")
        measure = intent.aggregate_column or "rows"
        if kind is IntentKind.COUNT:
            head = f"Counts {main}"
        elif kind is IntentKind.AGGREGATE:
            head = f"Computes the {agg} of {measure} over {main}"
        elif kind is IntentKind.GROUP_BY:
            keys = ", ".join(
                g.column if g.grain is TimeGrain.NONE else f"{g.column} by {g.grain.name.lower()}"
                for g in intent.group_by
            )
            func = agg if intent.aggregate is not Aggregate.UNSPECIFIED else "count"
            head = f"Groups {main} by {keys} and computes the {func} of {measure} per group"
        elif kind is IntentKind.TOP_N:
            head = f"Lists the top {limit} {main}"
        elif kind is IntentKind.LOOKUP:
            head = f"Looks up {main}"
        else:
            head = f"Lists {main}"
        conditions = [self._condition(f) for f in intent.filters]
        if conditions:
            head += " where " + " and ".join(conditions)
        if intent.order_by and kind is not IntentKind.GROUP_BY:
            head += ", ordered by " + ", ".join(
                f"{o.column} {'descending' if o.descending else 'ascending'}"
                for o in intent.order_by
            )
        if limit is not None and kind is not IntentKind.TOP_N:
            head += f", at most {limit} rows"
        return head + "."

    @staticmethod
    def _condition(spec: Filter) -> str:
        shown = [str(v.value) for v in spec.values]
        if spec.op is FilterOp.IN_RANGE and len(shown) == 2:
            return f"{spec.column} is in [{shown[0]}, {shown[1]})"
        if not shown:
            return f"{spec.column} {_OP_WORDS[spec.op]}"
        return f"{spec.column} {_OP_WORDS[spec.op]} " + ", ".join(
            f"'{s}'" if spec.values[0].kind == "string_value" else s for s in shown
        )


def intent_tables(intent: Intent) -> Sequence[str]:
    return [intent.table, *intent.join_tables]
