"""Compile a ``SqlIntent`` to one Postgres SELECT with sqlglot: safe by construction.

Every name is checked against the catalog and quoted by sqlglot; values become literals
built by sqlglot, never spliced text. The SQL service still runs the result through its
read-only gate: construction is one layer of defense, not the only one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.common.llm._linking import column_kind
from services.common.llm._types import (
    AggregateFunction,
    CatalogColumn,
    FilterOp,
    IntentFilter,
    IntentKind,
    SchemaCatalog,
    SortDirection,
    SqlIntent,
)

DEFAULT_TOP_N = 10


class IntentError(ValueError):
    """The intent does not fit the catalog; the message names the rule, never a value."""


@dataclass(frozen=True)
class _Ref:
    table: str
    column: str
    relation: str  # "base", "parent" or "child"
    info: CatalogColumn


def compile_intent(intent: SqlIntent, catalog: SchemaCatalog, *, row_limit: int = 50) -> str:
    """The intent as one SELECT (Postgres dialect); raises IntentError if it cannot be."""
    return _Compiler(intent, catalog, row_limit).build().sql(dialect="postgres")


class _Compiler:
    def __init__(self, intent: SqlIntent, catalog: SchemaCatalog, row_limit: int) -> None:
        if row_limit < 1:
            raise IntentError("row_limit must be at least 1")
        base = catalog.table(intent.table)
        if base is None:
            raise IntentError(f"unknown table {intent.table!r}")
        self.intent = intent
        self.catalog = catalog
        self.base = base.name
        self.row_limit = row_limit
        self.parents: dict[str, tuple[str, str]] = {}  # parent -> (fk column, parent column)

    # ---- references ------------------------------------------------------------

    def _resolve(self, ref: str, *, allow_child: bool = False) -> _Ref:
        table_name, _, column_name = ref.rpartition(".")
        table_name = table_name or self.base
        table = self.catalog.table(table_name)
        if table is None:
            raise IntentError(f"unknown table {table_name!r}")
        column = table.column(column_name)
        if column is None:
            raise IntentError(f"unknown column {table.name}.{column_name}")
        if table.name == self.base:
            return _Ref(table.name, column.name, "base", column)
        base = self.catalog.table(self.base)
        assert base is not None
        for fk in base.columns:
            if fk.references and fk.references.rpartition(".")[0].lower() == table.name.lower():
                self.parents.setdefault(table.name, (fk.name, fk.references.rpartition(".")[2]))
                return _Ref(table.name, column.name, "parent", column)
        if allow_child:
            for fk in table.columns:
                if fk.references and fk.references.rpartition(".")[0].lower() == self.base.lower():
                    return _Ref(table.name, column.name, "child", column)
        raise IntentError(f"table {table.name} is not joined to {self.base} by a foreign key")

    def _child_link(self, child: str) -> tuple[str, str]:
        table = self.catalog.table(child)
        assert table is not None
        for fk in table.columns:
            if fk.references and fk.references.rpartition(".")[0].lower() == self.base.lower():
                return fk.name, fk.references.rpartition(".")[2]
        raise IntentError(f"table {child} does not reference {self.base}")

    @staticmethod
    def _col(ref: _Ref) -> exp.Column:
        return _column(ref.table, ref.column)

    # ---- pieces ------------------------------------------------------------------

    def _condition(self, flt: IntentFilter, ref: _Ref) -> exp.Expr:
        column = self._col(ref)
        kind = column_kind(ref.info)
        value = flt.value
        if flt.op is FilterOp.CONTAINS:
            text = str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            return exp.ILike(this=column, expression=exp.Literal.string(f"%{text}%"))
        literal = _literal(value, kind)
        builders: dict[FilterOp, type[exp.Binary]] = {
            FilterOp.EQ: exp.EQ,
            FilterOp.NE: exp.NEQ,
            FilterOp.GT: exp.GT,
            FilterOp.GTE: exp.GTE,
            FilterOp.LT: exp.LT,
            FilterOp.LTE: exp.LTE,
        }
        if kind == "text" and flt.op in (FilterOp.EQ, FilterOp.NE):
            # Stored values differ in case from how people type them.
            lowered = exp.Lower(this=column)
            target = exp.Lower(this=literal)
            return builders[flt.op](this=lowered, expression=target)
        return builders[flt.op](this=column, expression=literal)

    def _where(self) -> exp.Expr | None:
        conditions: list[exp.Expr] = []
        by_child: dict[str, list[exp.Expr]] = {}
        for flt in self.intent.filters:
            ref = self._resolve(flt.column, allow_child=True)
            condition = self._condition(flt, ref)
            if ref.relation == "child":
                by_child.setdefault(ref.table, []).append(condition)
            else:
                conditions.append(condition)
        for child, child_conditions in by_child.items():
            fk, parent_column = self._child_link(child)
            link = exp.EQ(
                this=_column(child, fk),
                expression=_column(self.base, parent_column),
            )
            sub = (
                exp.select(exp.Literal.number(1))
                .from_(_table(child))
                .where(exp.and_(link, *child_conditions))
            )
            conditions.append(exp.Exists(this=sub))
        return exp.and_(*conditions) if conditions else None

    def _aggregate(self) -> exp.Expr:
        agg = self.intent.aggregate
        if agg is None:
            raise IntentError(f"{self.intent.kind.value} intent needs an aggregate")
        if agg.column == "*":
            if agg.function is not AggregateFunction.COUNT:
                raise IntentError(f"{agg.function.value} needs a column, not *")
            call: exp.Expr = exp.Count(this=exp.Star())
        else:
            ref = self._resolve(agg.column)
            if agg.function in (AggregateFunction.SUM, AggregateFunction.AVG) and (
                column_kind(ref.info) != "numeric"
            ):
                raise IntentError(f"{agg.function.value} needs a numeric column, got {ref.column}")
            functions: dict[AggregateFunction, type[exp.Func]] = {
                AggregateFunction.COUNT: exp.Count,
                AggregateFunction.SUM: exp.Sum,
                AggregateFunction.AVG: exp.Avg,
                AggregateFunction.MIN: exp.Min,
                AggregateFunction.MAX: exp.Max,
            }
            call = functions[agg.function](this=self._col(ref))
        return exp.alias_(call, agg.alias, quoted=True)

    def _order(self) -> exp.Ordered | None:
        order_by = self.intent.order_by
        if not order_by:
            return None
        desc = self.intent.direction is SortDirection.DESC
        agg = self.intent.aggregate
        if agg is not None and order_by == agg.alias:
            target: exp.Expr = exp.column(agg.alias, quoted=True)
        else:
            target = self._col(self._resolve(order_by))
        return exp.Ordered(this=target, desc=desc, nulls_first=False)

    def _limit(self, default: int) -> int:
        requested = self.intent.limit
        if requested is not None and requested < 1:
            raise IntentError("limit must be at least 1")
        return min(requested or default, self.row_limit)

    def _projection(self) -> list[exp.Expr]:
        if not self.intent.columns:
            raise IntentError(f"{self.intent.kind.value} intent needs at least one column")
        return [self._col(self._resolve(c)) for c in self.intent.columns]

    # ---- the statement -----------------------------------------------------------

    def build(self) -> exp.Select:
        kind = self.intent.kind
        group_refs: list[_Ref] = []
        if kind is IntentKind.COUNT:
            agg = self.intent.aggregate
            if agg is not None and (agg.function is not AggregateFunction.COUNT):
                raise IntentError("count intent takes a count aggregate")
            alias = agg.alias if agg else "count_all"
            select = exp.select(exp.alias_(exp.Count(this=exp.Star()), alias, quoted=True))
            limit: int | None = None
        elif kind is IntentKind.AGGREGATE:
            select = exp.select(self._aggregate())
            limit = None
        elif kind is IntentKind.GROUP_BY:
            if not self.intent.group_by:
                raise IntentError("group_by intent needs at least one group column")
            group_refs = [self._resolve(g) for g in self.intent.group_by]
            select = exp.select(*[self._col(r) for r in group_refs], self._aggregate())
            limit = self._limit(self.row_limit)
        elif kind is IntentKind.TOP_N:
            if not self.intent.order_by:
                raise IntentError("top_n intent needs order_by")
            select = exp.select(*self._projection())
            limit = self._limit(DEFAULT_TOP_N)
        else:  # LIST and LOOKUP
            select = exp.select(*self._projection())
            limit = self._limit(self.row_limit)
        ordered = self._order()
        where = self._where()
        select = select.from_(_table(self.base))
        for parent, (fk, parent_column) in self.parents.items():
            select = select.join(
                _table(parent),
                on=exp.EQ(
                    this=_column(self.base, fk),
                    expression=_column(parent, parent_column),
                ),
            )
        if where is not None:
            select = select.where(where)
        if group_refs:
            select = select.group_by(*[self._col(r) for r in group_refs])
        if ordered is not None and kind not in (IntentKind.COUNT, IntentKind.AGGREGATE):
            select = select.order_by(ordered)
        if limit is not None:
            select = select.limit(limit)
        return select


def _table(name: str) -> exp.Table:
    """A table reference; ``schema.table`` names keep their schema."""
    schema, _, table = name.rpartition(".")
    return exp.table_(table, db=schema or None, quoted=True)


def _column(table: str, column: str) -> exp.Column:
    schema, _, bare = table.rpartition(".")
    return exp.column(column, table=bare, db=schema or None, quoted=True)


def _literal(value: str | int | float | bool, kind: str) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        if kind == "text":
            return exp.Literal.string(str(value))
        return exp.Literal.number(value)
    if kind == "numeric":
        try:
            return exp.Literal.number(float(value) if "." in value else int(value))
        except ValueError:
            raise IntentError("a numeric column was compared with a non-number") from None
    return exp.Literal.string(value)
