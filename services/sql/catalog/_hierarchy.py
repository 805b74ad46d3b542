"""A table's reference to its own rows, found in the data where no name says it.

``employees.reports_to`` holds another employee's ``employee_id``. Declared, it is a
foreign key to its own table and the readers use it ("who reports to Andrew Fuller" is
``employees`` joined to itself, ``linker._self_join``; the wrong reading is refused,
``verify._self_reference``). With the keys dropped nothing of the name ties it to a key
(``reports_to`` names no table), so the other inference steps never try it, and the
question was answered with Fuller's own ``reports_to``: a confident wrong answer.

Small integer keys (1..9) hold any column of small numbers, so "every value is a key"
is no evidence alone: on the study data a count (``cylinders``), the flights' clock
times and calendar parts (``dep_time``, ``hour``, ``month``), a wallet transaction's
receiving user meet it as well as ``reports_to`` does (ISSUE-45, s67 keyself). What
the data of a hierarchy shows and a number that happens to lie in 1..N does not:

- a head: some row refers to no other (its value is NULL), and none to itself;
- a shared referent: some row is referred to by two or more (a manager of several);
- no loop: following the reference from any row referred to reaches a head within
  :data:`CHAIN_MAX` steps. Numbers read as keys run in circles or stand still (flight
  2013's ``year`` is 2013; car 4 has 4 ``cylinders``): a tree never does.

The column must also be the key's type family, no measure by name, no key of its own
table, and not found referring to another table already; every one of its distinct
values (all, not a sample) must be a key of the table. Each read is one of the load's
counted reads (``_inference_work``): a table's columns are checked in one read, the
chains of each survivor in one more, charged the rows each step scans.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from services.sql.catalog._candidates import single_keys, type_family
from services.sql.catalog._catalog import Catalog, ColumnInfo, JoinInfo, JoinOrigin, TableInfo
from services.sql.catalog._inference_work import InferenceReads
from services.sql.words import measure_name

# The longest chain of references a hierarchy is believed to have (an org chart, a
# category tree): a walk still going after this many steps is a loop, or no hierarchy.
CHAIN_MAX = 32
_FAMILIES = ("int", "text", "uuid")


async def self_references(
    reads: InferenceReads,
    catalog: Catalog,
    referencing: set[tuple[str, tuple[str, ...]]],
) -> list[JoinInfo]:
    """The references from a table to its own single-column key the data shows (see the
    module's docstring); ``referencing``: the (table, columns) already found referring
    to another table, which are not tried."""
    found: list[JoinInfo] = []
    for table in catalog.tables:
        keys = single_keys(table)
        if len(table.primary_key) != 1 or not keys:
            continue
        key = keys[0]
        family = type_family(key.data_type)
        if family not in _FAMILIES:
            continue
        declared = {fk.columns for fk in table.foreign_keys}
        columns = [
            c
            for c in table.columns
            if c.name != key.name
            and type_family(c.data_type) == family
            and not measure_name(c.name)
            and (c.name,) not in declared
            and (table.qualified, (c.name,)) not in referencing
            and (c.name,) not in table.unique_keys
        ]
        if not columns:
            continue
        for column, counts in await _held(reads, table, key, columns):
            if await _ends(reads, table, key, column):
                found.append(_join(table, key, column, counts))
    return found


async def _held(
    reads: InferenceReads, table: TableInfo, key: ColumnInfo, columns: Sequence[ColumnInfo]
) -> list[tuple[ColumnInfo, tuple[int, int, int]]]:
    """The columns whose every distinct value is a key of the table, with a head and a
    shared referent, each with (rows referring to none, rows referring, distinct
    referents); one read of the whole table."""
    t, k = sql.Identifier(table.schema, table.name), sql.Identifier(key.name)
    parts: list[sql.Composable] = [sql.SQL("count(*)")]
    for column in columns:
        c = sql.Identifier(column.name)
        parts += [
            sql.SQL("count({c})").format(c=c),
            sql.SQL("count(DISTINCT {c})").format(c=c),
            sql.SQL("count(DISTINCT {c}) FILTER (WHERE {c} IN (SELECT {k} FROM {t}))").format(
                c=c, k=k, t=t
            ),
            sql.SQL("count(*) FILTER (WHERE {c} = {k})").format(c=c, k=k),
        ]
    statement = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(parts), t)
    # the table scanned once, and its keys once more for each column's lookup
    row = await reads.one(statement, (), (table.qualified,) * (1 + len(columns)))
    if row is None:
        return []
    rows = int(row[0])
    held = []
    for i, column in enumerate(columns):
        values, distinct, found, own = (int(v) for v in row[1 + 4 * i : 5 + 4 * i])
        heads = rows - values
        if (
            distinct
            and found == distinct  # every value a key of the table
            and heads > 0  # some row refers to no other
            and not own  # and none to itself
            and distinct < values  # some row referred to by more than one
        ):
            held.append((column, (heads, values, distinct)))
    return held


async def _ends(
    reads: InferenceReads, table: TableInfo, key: ColumnInfo, column: ColumnInfo
) -> bool:
    """Whether every chain of references from a row referred to reaches a head (a row
    referring to none) within :data:`CHAIN_MAX` steps; False when it does not or the
    read is not made."""
    t, k, c = (
        sql.Identifier(table.schema, table.name),
        sql.Identifier(key.name),
        sql.Identifier(column.name),
    )
    statement = sql.SQL(
        "WITH RECURSIVE walk(at, depth) AS ("
        "SELECT DISTINCT {c}, 1 FROM {t} WHERE {c} IS NOT NULL "
        "UNION ALL "
        "SELECT p.{c}, w.depth + 1 FROM walk AS w JOIN {t} AS p ON p.{k} = w.at "
        "WHERE p.{c} IS NOT NULL AND w.depth < %s) "
        "SELECT coalesce(max(depth), 0) FROM walk"
    ).format(t=t, k=k, c=c)
    # each step of the walk scans the table once
    row = await reads.one(statement, (CHAIN_MAX,), (table.qualified,) * (CHAIN_MAX + 1))
    return row is not None and int(row[0]) < CHAIN_MAX


def _join(
    table: TableInfo, key: ColumnInfo, column: ColumnInfo, counts: tuple[int, int, int]
) -> JoinInfo:
    heads, referring, distinct = counts
    return JoinInfo(
        table.qualified,
        (column.name,),
        table.qualified,
        (key.name,),
        JoinOrigin.INFERRED,
        f"every value of {column.name} is a {key.name} of {table.name}: {referring} rows "
        f"refer to {distinct} others, {heads} to none, and every chain of them ends",
    )
