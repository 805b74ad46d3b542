"""The earlier statement as a follow-up reads it: one SELECT parsed with sqlglot, the
tables it reads itself, and its tables' names as words."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.verify import conjuncts
from services.sql.words import common_prefix, name_words


class FollowUpError(Exception):
    """The earlier statement cannot carry this follow-up; the message says why."""


def parse(sql: str) -> exp.Select:
    """The statement as one SELECT, or FollowUpError."""
    try:
        tree = sqlglot.parse_one(sql, dialect="postgres")
    except sqlglot.errors.ParseError as exc:
        raise FollowUpError("the earlier statement does not parse") from exc
    if not isinstance(tree, exp.Select):
        raise FollowUpError("the earlier statement is not a single SELECT")
    return tree


def sources(select: exp.Select) -> list[exp.Table]:
    """The tables a SELECT reads itself (its FROM and joins, not its sub-queries')."""
    clauses = [select.args.get("from_"), *(select.args.get("joins") or ())]
    return [c.this for c in clauses if c is not None and isinstance(c.this, exp.Table)]


def aliased(select: exp.Select, catalog: Catalog, *, nested: bool) -> dict[str, TableInfo]:
    """The catalog's table behind each alias (or bare name) of the statement: only those
    it reads itself (``sources``), keyed as written, where its own columns are what a
    follow-up compares; or with ``nested`` every table it reads, sub-queries' too, keyed
    lowercased, where any column the statement names anywhere must be placed. A table
    the catalog does not hold is left out."""
    tables = select.find_all(exp.Table) if nested else sources(select)
    found: dict[str, TableInfo] = {}
    for table in tables:
        info = table_for(catalog, table)
        if info is not None:
            alias = table.alias_or_name
            found[alias.lower() if nested else alias] = info
    return found


def readable(table: TableInfo, catalog: Catalog) -> str:
    """A table's name as words, without the prefix every table of the database shares
    ("sbCustomer" among sbTransaction, sbTicker … → "customer")."""
    prefix = common_prefix([t.name for t in catalog.tables])
    name = table.name[len(prefix) :] if prefix and len(table.name) > len(prefix) else table.name
    return " ".join(name_words(name)) or table.name


def column_name(table: TableInfo, column: str) -> str:
    """A column's name without the prefix its table gives every column ("sbTxStatus"
    among sbTxId, sbTxType … → "Status"), as the linker reads column names."""
    names = [c.name for c in table.columns]
    prefix = common_prefix(names, minimum=3) if len(names) >= 4 else ""
    return column[len(prefix) :] if prefix and len(column) > len(prefix) else column


def _canonical(node: exp.Expr, names: dict[str, str]) -> str:
    """``node`` with every alias replaced by its table's qualified name."""
    copied = node.copy()
    for column in copied.find_all(exp.Column):
        if column.table in names:
            column.set("table", exp.to_identifier(names[column.table]))
    return copied.sql(dialect="postgres")


def _shape(select: exp.Select, catalog: Catalog) -> tuple[object, ...] | None:
    """What a statement computes, whatever it shows: its tables, joins, conditions,
    grouping, measures, ranking and row count (None when a table is read twice)."""
    names: dict[str, str] = {}
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None or info.qualified in names.values():
            return None
        names[source.alias_or_name] = info.qualified
    joins = sorted(
        c
        for join in select.args.get("joins") or ()
        if (on := join.args.get("on")) is not None
        for c in (_canonical(p, names) for p in conjuncts(on))
    )
    where_clause = select.args.get("where")
    parts = conjuncts(where_clause.this) if where_clause is not None else []
    where = sorted(_canonical(c, names) for c in parts)
    group_clause = select.args.get("group")
    group = sorted(_canonical(g, names) for g in (group_clause.expressions if group_clause else ()))
    aliased = {e.alias: e.unalias() for e in select.expressions if e.alias}
    measures = sorted(
        _canonical(e.unalias(), names) for e in select.expressions if e.find(exp.AggFunc)
    )
    limit = select.args.get("limit")
    ranked: list[str] = []
    if limit is not None and select.args.get("order") is not None:
        first = select.args["order"].expressions[0]
        key = first.this
        if isinstance(key, exp.Column) and not key.table and key.name in aliased:
            key = aliased[key.name]
        elif isinstance(key, exp.Literal) and key.is_int:
            key = select.expressions[int(key.name) - 1].unalias()
        ranked = [_canonical(key, names), str(bool(first.args.get("desc")))]
    return (
        sorted(names.values()),
        joins,
        where,
        group,
        measures,
        ranked,
        limit.sql(dialect="postgres") if limit is not None else "",
        bool(select.args.get("distinct")),
        bool(select.args.get("having")),
    )


# Columns a statement shows, as (qualified table, column).
Shown = set[tuple[str, str]]


def _shown(select: exp.Select, catalog: Catalog) -> tuple[Shown, Shown]:
    """(every plain column a statement shows, those of them that are their table's key),
    each as (qualified table, column)."""
    tables: dict[str, TableInfo] = {}
    for source in sources(select):
        info = table_for(catalog, source)
        if info is not None:
            tables[source.alias_or_name] = info
    shown: Shown = set()
    keys: Shown = set()
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or column.table not in tables:
            continue
        info = tables[column.table]
        shown.add((info.qualified, column.name))
        if info.primary_key == (column.name,):
            keys.add((info.qualified, column.name))
    return shown, keys


def adds_only_keys(spelled: str, built: str, catalog: Catalog) -> bool:
    """Whether ``spelled`` shows every plain column ``built`` shows and, beside them, only
    tables' keys: a reading that adds an id to what the earlier answer showed tells the
    user nothing more (it is the linker's way with some phrasings, not the question's),
    where one that adds a name does (a name where the earlier answer showed an id)."""
    try:
        wide, keys = _shown(parse(spelled), catalog)
        narrow, _ = _shown(parse(built), catalog)
    except FollowUpError:
        return False
    extra = wide - narrow
    return narrow <= wide and bool(extra) and extra <= keys


def same_query(left: str, right: str, catalog: Catalog) -> bool:
    """Whether two statements compute the same rows, differing at most in the plain
    columns they show beside them (an id, a name)."""
    try:
        a, b = parse(left), parse(right)
    except FollowUpError:
        return False
    if a.args.get("having") or b.args.get("having"):
        return False
    shape = _shape(a, catalog)
    return shape is not None and shape == _shape(b, catalog)
