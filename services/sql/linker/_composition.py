"""Composition: the plan as one SELECT: the base table, joins along the join graph (outer
when every row of the grouped entity is kept), measures as SQL, WHERE, GROUP BY, HAVING,
ORDER BY with tie-breakers, LIMIT."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from sqlglot import exp

from services.sql.catalog import Edge, TableInfo, is_number
from services.sql.linker._context import LinkContext
from services.sql.linker._coverage import check_coverage
from services.sql.linker._elided import show_elided_count
from services.sql.linker._lookup import fact_candidates, refers_to_rows, without_names
from services.sql.linker._naming import explain_plan, output_names, slot
from services.sql.linker._plan import (
    Linked,
    LinkError,
    Measure,
    Plan,
    fans_out,
    is_key,
    name_columns,
    person_name,
    quote,
    table_sql,
)
from services.sql.linker._terms import render_sql
from services.sql.linker._unasked import without_unasked_keys
from services.sql.linker._vocabulary import Col
from services.sql.results import period_sql, with_deciding
from services.sql.words import (
    name_words,
    stem,
)


def compose(ctx: LinkContext, plan: Plan) -> Linked:
    tables: list[TableInfo] = []

    def need(t: TableInfo | None) -> None:
        if t is not None and t not in tables:
            tables.append(t)

    show_elided_count(ctx, plan)
    without_unasked_keys(plan)
    counted = [m.table for m in plan.measures if m.func in ("COUNT", "COUNT_DISTINCT") and m.table]
    counted += [h[0].table for h in plan.having if h[0].table is not None]
    if (
        plan.having
        and plan.entity is None
        and plan.dims
        and plan.dims[0].col.table.primary_key
        # "nationalities shared by at least two people": rows of the listed column's own
        # table counted per value, not per row of it (each row is one)
        and all(h[0].table is not plan.dims[0].col.table for h in plan.having)
    ):
        plan.entity = plan.dims[0].col.table
    if plan.entity is None and plan.measures and plan.dims:
        plan.entity = _named_entity(ctx, plan)
    for m in plan.measures:
        need(m.col.table if m.col else None)
        need(m.filter[0].table if m.filter else None)
        for t in m.tables:
            need(t)
    base = choose_base(ctx, plan, counted)
    keep_all = keeps_all(ctx, plan, base)
    if keep_all and plan.entity is not None:
        base = plan.entity
    outer = keep_all  # outer joins from the grouped entity: sums of no rows are 0
    if not keep_all:
        lift_condition(plan)
    ordered = [base] + [t for t in tables if t is not base]
    for d in plan.dims:
        if d.col.table not in ordered:
            ordered.append(d.col.table)
    raw_cols = [c for _, cols in plan.raw for c in cols.values()]
    for c in [*(f[0] for f in plan.filters), *(p[0] for g in plan.ors for p in g), *raw_cols]:
        if c.table not in ordered:
            ordered.append(c.table)
    for t in counted:
        if t is not None and t not in ordered and not count_key(ctx, base, t):
            ordered.append(t)
    for t in plan.semi:
        if t not in ordered:
            ordered.append(t)
            plan.distinct = True
    shown = {d.col.table.qualified for d in plan.dims}
    if (
        not plan.measures
        and not plan.having
        and not plan.limit
        and len(shown) == 1
        and fans_out(ctx.graph, plan.dims[0].col.table, {t.qualified for t in ordered})
    ):
        plan.distinct = True  # as the clause reader lists rows through referring rows
    if not plan.measures and not plan.having and not plan.limit and codes_only(ctx, plan):
        plan.distinct = True
    joins = ctx.graph.tree(base.qualified, [t.qualified for t in ordered[1:]])
    if joins is None:
        raise LinkError("no join path connects the tables the question names")
    alias: dict[str, str] = {base.qualified: "t0"}
    from_sql = f"{table_sql(base)} AS t0"
    for i, (name, edge) in enumerate(joins, 1):
        table = ctx.catalog.table(name)
        assert table is not None
        alias[name] = f"t{i}"
        prev = edge.other(name)
        kind = "LEFT JOIN" if keep_all else "JOIN"
        from_sql += f" {kind} {table_sql(table)} AS t{i} ON " + join_condition(
            edge, name, f"t{i}", alias[prev]
        )

    def ref(c: Col) -> str:
        return f"{alias[c.table.qualified]}.{quote(c.column.name)}"

    select: list[str] = []
    group: list[str] = []
    for i, d in enumerate(plan.dims):
        expr = ref(d.col)
        if d.grain:
            expr = period_sql(d.grain, expr)
        select.append(f"{expr} AS {slot(f'd{i}')}")
        group.append(expr)
    grouped = bool(plan.measures or plan.having)
    if plan.entity is not None and grouped and plan.entity.primary_key:
        key = f"{alias.get(plan.entity.qualified, 't0')}.{quote(plan.entity.primary_key[0])}"
        if plan.entity.qualified in alias and key not in group:
            group.append(key)
            labelled = [i for i, d in enumerate(plan.dims) if d.col.table is plan.entity]
            if labelled and _said_by_key(plan.entity) and not _asked(ctx, plan, labelled):
                # "top 5 destinations by number of flights": the airports grouped by
                # their code are said by it ('LAX'), as a listing keeps it (``_unasked``):
                # shown beside their names, not only grouped by
                name = quote(plan.entity.primary_key[0])
                select.insert(labelled[0], f"{key} AS {name}")
    if grouped:
        group += [ref(c) for c in plan.ties if ref(c) not in group]
    places = re.search(r"\brounded?\s+(?:off\s+)?to\s+(\d)\s+decimal(?:\s+places?)?", ctx.low)
    # rows counted through a table that refers to them many times are counted once each,
    # in one number whose noun is the counted table's name ("how many patients …", which
    # the fan-out check refuses as a row count); not beside a HAVING test, which counts
    # per group, nor grouped, nor where the noun is another word ("how many dog pets"):
    # those kept their row counts (a Spider-blind answer was lost when they did not)
    # Grouped, only where the rows counted are parties (people or firms one can
    # contact) and the rows that refer to them are events, each its own row under a key
    # of its own ("how many patients did each doctor treat?" joins treatments, one per
    # visit): a row count per doctor counts treatments. A thing reached through events
    # ("how many cars did each salesperson sell?") is counted per event, a unit sold
    # each time (a defog follow-up's right answer); a table of pairs keyed by its
    # references (singers in concerts) lists each pair once, and its row count is kept.
    once = (
        not plan.having
        and _counts_the_table(ctx, base)
        and (
            _fanned_out(ctx, base, alias)
            if not plan.dims
            else _party(base) and _fanned_by_events(ctx, base, alias)
        )
    )
    texts: list[str] = []
    for said in plan.measures:
        m = replace(said, func="COUNT_DISTINCT") if plan.dims and _counts_values(said) else said
        text = measure_sql(ctx, m, base, alias, ref, outer=outer, once=once)
        if places and m.func not in ("RANK", "COUNT", "COUNT_DISTINCT", "COUNT_COL"):
            text = f"ROUND(CAST({text} AS NUMERIC), {int(places.group(1))})"
            ctx.known.update({"rounded", "round", "decimal", "places", "place"})
        texts.append(text)
    texts = one_column_each(plan, texts)
    for i, text in enumerate(texts):
        select.append(f"{text} AS {slot(f'm{i}')}")
    where: list[str] = []
    for c, cond in plan.filters:
        text = cond.replace("{c}", ref(c))
        if text not in where:
            where.append(text)
    for alternatives in plan.ors:
        where.append(" OR ".join(f"({cond.replace('{c}', ref(c))})" for c, cond in alternatives))
    for tree, columns in plan.raw:
        where.append(render_sql(tree, columns, alias))
    for t in plan.anti:
        if t.qualified == base.qualified:
            continue
        path = ctx.graph.path(base.qualified, t.qualified)
        if not path or len(path) != 1:
            raise LinkError(f"no direct key links {base.name} and {t.name}")
        edge = path[0]
        where.append(
            f"NOT EXISTS (SELECT 1 FROM {table_sql(t)} AS x WHERE "
            + join_condition(edge, t.qualified, "x", "t0")
            + ")"
        )
    sql = (
        "SELECT " + ("DISTINCT " if plan.distinct and not plan.measures else "") + ", ".join(select)
    )
    sql += " FROM " + from_sql
    if where:
        sql += " WHERE " + " AND ".join(f"({w})" for w in where)
    if grouped and plan.dims:
        sql += " GROUP BY " + ", ".join(group)
    if plan.having:
        tests = [
            f"{measure_sql(ctx, m, base, alias, ref, outer=outer)} {op} {n}"
            for m, op, n in plan.having
        ]
        sql += " HAVING " + " AND ".join(tests)
    timed = [f"d{i}" for i, d in enumerate(plan.dims) if d.grain]
    if not plan.order and grouped and timed:
        # a grouping by a period ("per year", "per month") reads in time order, on every
        # client: the statement says it, as the intents path does (``_group_select``)
        sql += " ORDER BY " + ", ".join(f"{slot(t)} ASC NULLS LAST" for t in timed)
    if plan.order:
        parts = []
        for target, desc in plan.order:
            parts.append(f"{slot(target)} {'DESC' if desc else 'ASC'} NULLS LAST")
        if plan.limit:
            # ties at the cut are broken by the listed columns, so the answer is stable
            # (rows listed tie by their key; groups by name, the order people read)
            ties = list(range(len(plan.dims)))
            if plan.measures:
                ties.sort(key=lambda i: is_key(plan.dims[i].col))
            if plan.ties:
                parts += [ref(c) for c in plan.ties]
            else:
                parts += [slot(f"d{i}") for i in ties if f"d{i}" not in dict(plan.order)]
        sql += " ORDER BY " + ", ".join(parts)
    if plan.limit:
        sql += f" LIMIT {plan.limit}"
    for name, label in output_names(plan).items():
        sql = sql.replace(slot(name), quote(label))
    check_coverage(ctx, alias, plan)
    return Linked(
        # what chose the rows, shown before the checks read the statement (a question
        # may ask for it: "tail numbers and years of planes built before 1970")
        with_deciding(sql, ctx.catalog),
        tuple(alias),
        explain_plan(ctx, plan, base),
        tuple(ctx.applied),
    )


def one_column_each(plan: Plan, texts: list[str]) -> list[str]:
    """The measures' SQL (``texts``, one per measure of ``plan``), each expression once.

    "Which 3 ship countries had the most orders, and how many?" asks for one count twice:
    the ranking ranks by it and "how many" shows it. Two identical expressions over the
    same rows are one value, so they are one column: the later one is dropped from the
    plan and whatever ordered by it orders by the first. Shown twice, the answer has a
    column no other reading of the question has (a follow-up that adds "top 3 only" to
    the counts shows it once), and a reader sees two figures where there is one."""
    first: dict[str, int] = {}
    kept: list[str] = []
    moved: dict[str, str] = {}
    measures = []
    for i, text in enumerate(texts):
        if text in first:
            moved[f"m{i}"] = f"m{first[text]}"
            continue
        first[text] = len(kept)
        moved[f"m{i}"] = f"m{len(kept)}"
        kept.append(text)
        measures.append(plan.measures[i])
    if len(kept) == len(texts):
        return texts
    plan.measures[:] = measures
    order: list[tuple[str, bool]] = []
    for said, desc in plan.order:
        target = moved.get(said, said)
        if not any(t == target for t, _ in order):
            order.append((target, desc))
    plan.order[:] = order
    return kept


def lift_condition(plan: Plan) -> None:
    """ "How many inactive customers per state": when the one measure carries the only
    condition, it is a condition on the rows (WHERE), not on that measure (FILTER). The
    two differ only in groups with no such rows: FILTER lists every state, most with 0,
    which is not what was asked; WHERE lists the states that have some. Ungrouped they
    are the same number, and a follow-up that groups the statement ("by gateway?")
    then groups the right rows. A condition stays on its measure when another measure is
    beside it ("inactive and all customers"), inside a share or formula, when the
    question keeps every group ("for all states", handled by the caller), or when a
    HAVING test counts rows too."""
    if len(plan.measures) != 1:
        return
    measure = plan.measures[0]
    plain = ("COUNT", "COUNT_DISTINCT", "COUNT_COL", "SUM", "AVG", "MIN", "MAX")
    if measure.filter is None or measure.func not in plain:
        return
    if plan.having:
        return  # a count in HAVING may be of all rows: the condition stays where it is
    plan.filters.append(measure.filter)
    measure.filter = None


def keeps_all(ctx: LinkContext, plan: Plan, base: TableInfo) -> bool:
    """ "… for all customers", "for every salesperson": a grouped entity keeps its rows
    with no facts (outer join, zero counts), unless a filter or a limit on the facts
    says otherwise."""
    every = re.search(
        r"\b(?:for|of|include|including)\s+(?:all|every)\s+(?:the\s+)?(\w+)|\beven (?:those|if)\b",
        ctx.low,
    )
    if every is None or not plan.measures or plan.limit:
        return False
    entity = plan.entity
    if entity is None and every.group(1):
        hits = ctx.vocab.tables_named([stem(every.group(1))])
        if hits and plan.dims and all(d.col.table is hits[0][0] for d in plan.dims):
            entity = plan.entity = hits[0][0]
    if entity is None or entity is base:
        return False
    return all(c.table.qualified == entity.qualified for c, _ in plan.filters)


def choose_base(ctx: LinkContext, plan: Plan, counted: Sequence[TableInfo | None]) -> TableInfo:
    cands = fact_candidates(ctx, plan)
    for c, _ in plan.filters:
        if c.table not in cands:
            cands.append(c.table)

    # the most "child" table: references most other candidates
    def children(t: TableInfo) -> int:
        return sum(
            1
            for e in ctx.graph.edges_of(t.qualified)
            if e.child == t.qualified and ctx.catalog.table(e.parent) in cands
        )

    measure_tables = [m.col.table for m in plan.measures if m.col and m.func not in ("COUNT_COL",)]
    if measure_tables:
        return max(measure_tables, key=children)
    if plan.measures:
        return max(cands, key=lambda t: (children(t), t in counted))
    if plan.dims:
        return plan.dims[0].col.table
    return cands[0]


def join_condition(edge: Edge, table: str, alias: str, other_alias: str) -> str:
    """``edge``'s columns equal, ``table`` under ``alias`` and the other side under
    ``other_alias`` (every pair of a composite edge)."""
    return " AND ".join(
        f"{alias}.{quote(mine)} = {other_alias}.{quote(theirs)}"
        for mine, theirs in edge.pairs(table)
    )


def _named_entity(ctx: LinkContext, plan: Plan) -> TableInfo | None:
    """ "the names of the high schoolers and how many friends each has": rows counted
    per *named row* of another table are per row, not per name, which two rows may
    share; the named table becomes the grouped entity (its key joins the grouping)."""
    measured = {m.col.table.qualified for m in plan.measures if m.col is not None}
    measured |= {m.table.qualified for m in plan.measures if m.table is not None}
    if not measured:
        return None
    col = plan.dims[0].col
    if (
        col.table.qualified in measured
        or not col.table.primary_key
        or plan.dims[0].grain
        or col.key not in {c.key for c in (*name_columns(col.table), *person_name(col.table))}
    ):
        return None
    return col.table


def _row_key(alias: str, table: TableInfo) -> str:
    """What tells ``table``'s rows apart: its key column, or every column of a key of
    several as one row value (a flight is an airline *and* a number: the distinct
    airlines among an airline's flights are one)."""
    columns = [f"{alias}.{quote(c)}" for c in table.primary_key]
    return columns[0] if len(columns) == 1 else f"({', '.join(columns)})"


_COUNTED_NOUN = re.compile(
    r"\b(?:how many|number of)\s+(?:the\s+|distinct\s+|different\s+)?([a-z]+)"
)


def _counts_the_table(ctx: LinkContext, base: TableInfo) -> bool:
    """The question counts ``base`` by its own name: the noun after "how many" or "number
    of" is the last word of the table's name ("how many patients" of ``patients``). A
    stored name said before the noun ("how many American Airlines planes") is a condition
    on the rows, not the noun (``without_names``): read past it, the planes are counted."""
    said = _COUNTED_NOUN.search(without_names(ctx, ctx.low))
    words = ctx.vocab.table_words[base.qualified]
    return said is not None and bool(words) and stem(said.group(1)) == words[-1]


def _fanned_out(ctx: LinkContext, base: TableInfo, alias: dict[str, str]) -> bool:
    """Whether a table joined beside the counted one refers to it many times over: "how
    many patients did Jane Smith treat?" joins treatments, whose rows name a patient once
    per treatment, so a row count counts treatments; the patients are their distinct keys.
    A reference that is the referring table's own key (one row each) multiplies nothing."""
    for e in ctx.graph.edges_of(base.qualified):
        if e.parent != base.qualified or e.child == base.qualified or e.child not in alias:
            continue
        child = ctx.catalog.table(e.child)
        if child is not None and set(child.primary_key) <= set(e.child_columns):
            continue
        return True
    return False


def _party(table: TableInfo) -> bool:
    """Whether the rows of ``table`` are parties: people named by a first and a last
    name, or anyone the data keeps an e-mail address or a phone number for (a customer,
    a merchant; read in the name as written, ``sbcustemail`` folded to lower case). A party is one however many events name it; a thing (a car) is not
    told so, and the events that name it count units of it."""
    return bool(person_name(table)) or any(
        part in c.name.lower() for c in table.columns for part in ("email", "phone")
    )


def _fanned_by_events(ctx: LinkContext, base: TableInfo, alias: dict[str, str]) -> bool:
    """Whether a table joined beside the counted one refers to it once per event: its
    rows are keyed by one column of their own (``treatment_id``), not by the references
    they hold, so one counted row (a patient) stands in many of them within a group (a
    doctor's treatments). A table keyed by its references (``singer_in_concert``) or
    by them with another part (a grade) is a table of pairs, left as it counts."""
    for e in ctx.graph.edges_of(base.qualified):
        if e.parent != base.qualified or e.child == base.qualified or e.child not in alias:
            continue
        child = ctx.catalog.table(e.child)
        if child is None or len(child.primary_key) != 1:
            continue
        if child.primary_key[0] not in e.child_columns:
            return True
    return False


def count_key(ctx: LinkContext, base: TableInfo, t: TableInfo) -> str:
    for e in ctx.graph.edges_of(base.qualified):
        if e.child == base.qualified and e.parent == t.qualified and len(e.child_columns) == 1:
            return e.child_column
    return ""


def expr_sql(
    ctx: LinkContext,
    node: object,
    base: TableInfo,
    alias: dict[str, str],
    ref: object,
    *,
    outer: bool = False,
) -> str:
    if not isinstance(node, tuple):
        raise LinkError("the definition's arithmetic could not be read")
    if node[0] == "num":
        return str(node[1])
    if node[0] == "m":
        return measure_sql(ctx, node[1], base, alias, ref, outer=outer)
    _, op, left, right = node
    a = expr_sql(ctx, left, base, alias, ref, outer=outer)
    b = expr_sql(ctx, right, base, alias, ref, outer=outer)
    if op == "/":
        return f"({a}) * 1.0 / NULLIF({b}, 0)"
    return f"({a} {op} {b})"


def _counts_values(m: Measure) -> bool:
    """ "destinations per carrier", "how many destinations does each carrier fly to?":
    a count of a column's noun (no table is named by it) per group counts the different
    values the group's rows hold there, not its rows with a value (``COUNT(dest)`` is
    every flight of the carrier). Held to a text column of no key of its own table (a
    code, a place, a name) and to a grouped answer: a number column counted ("number of
    shares") is a quantity read elsewhere, and one count over every row ("how many car
    models are there?") was measured to count rows in Spider's gold (ISSUE-45, s62)."""
    if m.func != "COUNT_COL" or m.col is None:
        return False
    column = m.col.column
    return not is_number(column.data_type) and column.name not in m.col.table.primary_key


def measure_sql(
    ctx: LinkContext,
    m: Measure,
    base: TableInfo,
    alias: dict[str, str],
    ref: object,
    *,
    outer: bool = False,
    once: bool = False,
) -> str:
    """``once``: the base's rows are joined to rows that refer to them many times
    (``_fanned_out``), so a count of the base's rows counts their distinct keys."""
    refer = ref
    filt = ""
    if m.filter is not None:
        col, cond = m.filter
        if col.table.qualified in alias:
            filt = f" FILTER (WHERE {cond.replace('{c}', refer(col))})"  # type: ignore[operator]
    if m.func == "EXPR":
        return expr_sql(ctx, m.expr[0], base, alias, ref, outer=outer)
    if m.func == "SQLEXPR":
        tree, columns = m.expr
        assert isinstance(tree, exp.Expr) and isinstance(columns, dict)
        return render_sql(tree, columns, alias)
    if m.func == "ELAPSED":
        start, end, unit, inner = m.expr
        assert isinstance(start, Col) and isinstance(end, Col)
        seconds = f"EXTRACT(EPOCH FROM ({refer(end)} - {refer(start)}))"  # type: ignore[operator]
        if start.column.data_type == "date" and end.column.data_type == "date":
            seconds = f"(({refer(end)} - {refer(start)}) * 86400)"  # type: ignore[operator]
        per = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}[str(unit)]
        return f"{inner}({seconds} / {per}.0)"
    if m.func == "SHARE":
        return f"ROUND(100.0 * COUNT(*){filt} / NULLIF(COUNT(*), 0), 2)"
    if m.func == "RANK" and isinstance(m.expr[0], Measure):
        inner = measure_sql(ctx, m.expr[0], base, alias, ref, outer=outer)
        over = f"PARTITION BY {refer(m.partition)} " if m.partition else ""  # type: ignore[operator]
        direction = "DESC" if m.descending else "ASC"
        return f"RANK() OVER ({over}ORDER BY {inner} {direction})"
    if m.func in ("COUNT", "COUNT_DISTINCT") and m.table is not None:
        if m.table.qualified == base.qualified:
            if base.primary_key and (m.func == "COUNT_DISTINCT" or once):
                return f"COUNT(DISTINCT {_row_key('t0', base)}){filt}"
            return f"COUNT(*){filt}"
        key = count_key(ctx, base, m.table)
        if key:
            return f"COUNT(DISTINCT t0.{quote(key)}){filt}"
        if m.table.qualified in alias and m.table.primary_key:
            return f"COUNT(DISTINCT {_row_key(alias[m.table.qualified], m.table)}){filt}"
        return f"COUNT(*){filt}"
    if m.func == "COUNT" or m.col is None:
        return f"COUNT(*){filt}"
    col = refer(m.col)  # type: ignore[operator]
    if m.func == "COUNT_COL":
        return f"COUNT({col}){filt}"
    if m.func == "COUNT_DISTINCT":
        return f"COUNT(DISTINCT {col}){filt}"
    if m.func == "SUM" and outer:
        return f"COALESCE(SUM({col}){filt}, 0)"
    return f"{m.func}({col}){filt}"


def _asked(ctx: LinkContext, plan: Plan, at: list[int]) -> bool:
    """Whether the question names a column of those shown ("the full name of the
    airline with the most flights"): what it asks is shown, and no key beside it."""
    said = {stem(w) for w in re.findall(r"[a-z]+", ctx.low)}
    return any(stem(w) in said for i in at for w in name_words(plan.dims[i].col.column.name))


def _said_by_key(table: TableInfo) -> bool:
    """Whether ``table``'s rows are said by their one-column text key (an airport's
    ``faa``, a ticker's symbol), not numbered by it (``_unasked.naming_number``)."""
    if len(table.primary_key) != 1:
        return False
    column = next((c for c in table.columns if c.name == table.primary_key[0]), None)
    return column is not None and not is_number(column.data_type)


def codes_only(ctx: LinkContext, plan: Plan) -> bool:
    """Whether the listing shows, of one table, only columns that hold other tables' keys
    ("which destinations did flights from JFK go to?" shows ``flights.dest``). What is
    asked for is the referred rows (the airports), and a listing that shows nothing else of
    the referring rows (no key, no label) cannot tell one of them from another: a code
    repeated once per flight is a duplicate that only inflates the answer, so each is
    listed once. A listing that shows any other column keeps one row per row."""
    if not plan.dims:
        return False
    table = plan.dims[0].col.table
    return all(
        d.col.table is table
        and d.col.column.name not in table.primary_key
        and refers_to_rows(ctx, d.col)
        for d in plan.dims
    )
