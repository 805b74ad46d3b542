"""A time bound on the event the question names: "Which players won an award in 2016?"
answered over awards joined to players, bounded by ``people.debut`` in 2016, lists the
award winners who debuted in 2016.

A year or a date in the question ("in 2016", "before March 2015") bounds the time of
some event, and which one the words say: the table whose rows the question names (the
awards) or a date column it names ("debuted"). A statement that bounds a date column
no word of the question names, of a table no word names (by its name or by a value of
it the statement compares), while another table it reads
— one the question does name — holds a time of its own (a date, or a column named for a
year, month or day), has bounded another event than the question's. It is refused; a
bound on a date the question names, or on the only table with a time, is left alone."""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.linker import DATE_NAME_WORDS, LinkContext, LinkError, is_temporal
from services.sql.verify._statement import StatementNodes, column_name
from services.sql.verify._table_said import parts_said, question_words, table_said
from services.sql.words import ISO_DATE, stem

# Name parts every date column shares: they tell no two dates apart.
_DATE_PARTS = frozenset({"date", "time", "dt", "at", "on", "day", "timestamp", "ts"})
_TIME_NAMES = frozenset(stem(w) for w in DATE_NAME_WORDS)
_COMPARISONS = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Between)


def check_bounded_event(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """Refuse (:class:`LinkError`) a date bound on a column and table the question does
    not name, beside a table it names that holds a time of its own."""
    if not isinstance(tree, exp.Select):
        return
    tables = {t.qualified: t for t in nodes.tables.values()}
    if len(tables) < 2:
        return
    words = question_words(ctx)
    for bounded, column in _date_bounds(tree, nodes):
        parts = ctx.vocab.column_words.get((bounded.qualified, column), [])
        if parts_said(words, [p for p in parts if p not in _DATE_PARTS]):
            continue
        if table_said(ctx, bounded, tree, nodes, words=words):
            continue
        if _relates_named(ctx, bounded, words):
            continue
        for other in tables.values():
            if other.qualified == bounded.qualified or not table_said(ctx, other, words=words):
                continue
            times = [c.name for c in other.columns if _dated(ctx, other, c.name)]
            if times:
                raise LinkError(
                    f"the statement bounds {bounded.name}.{column}, a date no word of the "
                    f"question names, where the question names {other.name}, which has a "
                    f"time of its own ({other.name}.{times[0]})"
                )


def _relates_named(ctx: LinkContext, bounded: TableInfo, words: list[str]) -> bool:
    """Whether ``bounded`` refers to two or more tables the question names: its rows are
    what relates them, the event the words say by naming both ("how many different
    customers did each employee sell to in 1998": an order is an employee's sale to a
    customer, and 1998 is the orders'), whatever its own name and whether or not the
    statement joins both (a count of distinct ``orders.customer_id`` reads no customers
    table). A time of one of the named tables is then an attribute of that table's rows
    (``employees.birth_date``), not the event's. A table that refers to one named table
    only (people beside their awards) is still another event."""
    referred = {
        edge.parent
        for edge in ctx.graph.edges_of(bounded.qualified)
        if edge.child == bounded.qualified and edge.parent != bounded.qualified
    }
    named = [
        t
        for q in sorted(referred)
        if (t := ctx.catalog.table(q)) is not None and table_said(ctx, t, words=words)
    ]
    return len(named) >= 2


def _dated(ctx: LinkContext, table: TableInfo, column: str) -> bool:
    info = table.column(column)
    if info is not None and is_temporal(info.data_type):
        return True
    parts = ctx.vocab.column_words.get((table.qualified, column), [])
    return bool(_TIME_NAMES & {stem(p) for p in parts})


def _date_bounds(tree: exp.Select, nodes: StatementNodes) -> list[tuple[TableInfo, str]]:
    """The date columns of the outer WHERE compared with a date literal."""
    where = tree.args.get("where")
    if where is None:
        return []
    found: list[tuple[TableInfo, str]] = []
    for comparison in where.find_all(*_COMPARISONS):
        if comparison.find_ancestor(exp.Select) is not tree:
            continue
        column = comparison.this
        if not isinstance(column, exp.Column):
            continue
        literals = [
            lit
            for lit in comparison.find_all(exp.Literal)
            if lit.is_string and ISO_DATE.search(lit.this)
        ]
        table = nodes.owner(column)
        if not literals or table is None:
            continue
        info = table.column(column_name(column))
        if info is not None and is_temporal(info.data_type):
            found.append((table, column_name(column)))
    return found
