"""A follow-up's condition on rows each earlier row has many of, as the earlier row's
having one (a semi-join), never as a join that would repeat it.

"only those that hosted a concert in 2015" after a list of stadiums, "just the ones who
taught Math" after teachers, "only counting those who sang in 2015" after a count of
singers: the linker reads the words over the earlier rows' table joined to the table that
holds the value (stadium → concert, teacher → course_arrange → course), and an earlier row
meets as many of those rows as it has concerts or courses. Joined onto the earlier
statement that would list a stadium once per concert and count a singer once per song, so
the filter on its own was refused (``_conditions._placed`` joins only tables each earlier
row meets once). What the words ask is the earlier rows that *have* such a row:

    EXISTS (SELECT 1 FROM concert AS f_t1 WHERE f_t1.stadium_id = s.stadium_id
            AND f_t1.year = 2015)

which keeps each earlier row once or not at all, so its count, sum, grouping and order
stay as they were. The same form serves a value two joins away through a table the
condition never names ("just the European ones" after car makers: car_makers → countries
→ continents), which the one-row joins of ``_placed`` reach only table by named table.
Only the linker's own joins are used, and only along the join graph's edges (declared
foreign keys, or inferred to a key): tables related by a mere overlap of values, a join
on anything but column equalities, an outer join, or a reading that also joins the
earlier tables to each other is no reading of "having one".
"""

from __future__ import annotations

from sqlglot import exp

from services.sql import verify
from services.sql.catalog import Catalog, JoinGraph, TableInfo
from services.sql.conversation._existence import names_tables
from services.sql.conversation._statement import sources
from services.sql.results import exists

# (linked alias, column) on each side of one join equality
_Pair = tuple[tuple[str, str], tuple[str, str]]


def semi_joined(
    linked: exp.Select,
    mapped: dict[str, str],
    mine: dict[str, TableInfo | None],
    catalog: Catalog,
    named: tuple[str, ...] | None = None,
) -> tuple[list[exp.Expr], set[tuple[str, str]]] | None:
    """(the conditions for the earlier statement, the (alias, column)s they compare) for
    a linked statement whose condition needs tables the earlier one does not read:
    ``mapped`` maps the linked aliases of the earlier statement's own tables to their
    aliases there, ``mine`` every linked alias to its table. None when the linked joins
    are not all key equalities of the join graph, or do not hang the other tables off
    the earlier ones in one connected piece. With ``named`` (the noun of "only those
    with a visit", see ``_existence``) the related row need meet no condition: the
    having of one is the condition, when the noun names every joined table."""
    if linked.args.get("group") or linked.args.get("having") or linked.args.get("limit"):
        return None
    where = linked.args.get("where")
    if (where is None and named is None) or any(info is None for info in mine.values()):
        return None
    inside = [alias for alias in mine if alias not in mapped]
    pairs = _key_pairs(linked, mine, catalog)
    if not inside or pairs is None:
        return None
    if named is not None and (
        where is not None or not names_tables(named, [i for a in inside if (i := mine[a])])
    ):
        return None
    inner = [p for p in pairs if p[0][0] in inside and p[1][0] in inside]
    linking = [p for p in pairs if (p[0][0] in inside) != (p[1][0] in inside)]
    if not linking or len(inner) + len(linking) != len(pairs):
        return None  # the reading joins the earlier tables to each other: not "having one"
    tables = {t.alias_or_name: t for t in sources(linked)}
    start = next(a for pair in linking for a, _ in pair if a in inside)
    joins: list[tuple[exp.Table, list[exp.Expr]]] = []
    placed = {start}
    used: set[int] = set()
    while len(placed) < len(inside):
        step = next(
            (a for a in inside if a not in placed and any(_meets(p, a, placed) for p in inner)),
            None,
        )
        if step is None:
            return None  # a linked table hangs off nothing the earlier rows reach
        on = [i for i, p in enumerate(inner) if _meets(p, step, placed)]
        used.update(on)
        joins.append((tables[step], [_eq(inner[i]) for i in on]))
        placed.add(step)
    correlated = [_eq(p) for p in linking] + [_eq(p) for i, p in enumerate(inner) if i not in used]
    outside: list[exp.Expr] = []
    within: list[exp.Expr] = []
    for condition in verify.conjuncts(where.this) if where is not None else ():
        compared = {c.table for c in condition.find_all(exp.Column)}
        if not compared or "" in compared or not compared <= set(mine):
            return None
        (within if compared & set(inside) else outside).append(condition.copy())
    if not within and named is None:
        return None
    conditions: list[exp.Expr] = [*outside, exists(tables[start], joins, [*correlated, *within])]
    columns: set[tuple[str, str]] = set()
    for condition in conditions:
        for column in condition.find_all(exp.Column):
            if column.table in mapped:
                column.set("table", exp.to_identifier(mapped[column.table]))
            columns.add((column.table, column.name))
    return conditions, columns


def _key_pairs(
    linked: exp.Select, mine: dict[str, TableInfo | None], catalog: Catalog
) -> list[_Pair] | None:
    """Every equality of the linked joins, each one a key edge of the join graph."""
    graph = JoinGraph(catalog)
    pairs: list[_Pair] = []
    for join in linked.args.get("joins") or ():
        on = join.args.get("on")
        if on is None or join.args.get("side") or join.args.get("kind"):
            return None
        for equality in verify.conjuncts(on):
            sides = (equality.this, equality.expression) if isinstance(equality, exp.EQ) else ()
            if len(sides) != 2 or not all(isinstance(s, exp.Column) for s in sides):
                return None
            (a, b) = ((s.table, s.name) for s in sides)
            left, right = mine.get(a[0]), mine.get(b[0])
            if left is None or right is None or not _is_edge(graph, left, a[1], right, b[1]):
                return None
            pairs.append((a, b))
    return pairs


def _is_edge(graph: JoinGraph, left: TableInfo, lcol: str, right: TableInfo, rcol: str) -> bool:
    said = (lcol.lower(), rcol.lower())
    return any(
        said in {(m.lower(), t.lower()) for m, t in edge.pairs(left.qualified)}
        for edge in graph.between(left.qualified, right.qualified)
    )


def _meets(pair: _Pair, alias: str, placed: set[str]) -> bool:
    ends = {pair[0][0], pair[1][0]}
    return alias in ends and bool((ends - {alias}) & placed)


def _eq(pair: _Pair) -> exp.Expr:
    (a, ac), (b, bc) = pair
    return exp.EQ(this=exp.column(ac, table=a), expression=exp.column(bc, table=b))


def rival(earlier: exp.Expr, added: exp.Expr) -> bool:
    """Whether ``added`` asks for the same kind of related row as ``earlier`` with other
    values ("and with AirCon?" after "only those with a Pool"): two semi-joins over the
    same tables by the same keys that differ only in what they compare. A row may have
    both (a property has many features), so the words may add the second or swap the
    first for it: which one is meant is not said, and either answer could be wrong."""
    if not isinstance(earlier, exp.Exists) or not isinstance(added, exp.Exists):
        return False
    shapes = []
    for node in (earlier, added):
        copied = node.copy()
        for literal in list(copied.find_all(exp.Literal)):
            literal.replace(exp.Placeholder())
        shapes.append(copied.sql(dialect="postgres"))
    return shapes[0] == shapes[1] and earlier.sql() != added.sql()
