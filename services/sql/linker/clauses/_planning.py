"""What was read, made a :class:`Plan`: the entity chosen, each ambiguous phrase resolved to
one column (a tie is a refusal), conditions rendered, absent rows composed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from services.sql.catalog import JoinGraph, TableInfo, is_number
from services.sql.linker._context import LinkContext
from services.sql.linker._dates import calendar_part
from services.sql.linker._mentions import (
    Mention,
)
from services.sql.linker._naming import condition_words
from services.sql.linker._plan import (
    Dim,
    Measure,
    Plan,
    code_description,
    fans_out,
    grouped_labels,
    is_key,
    is_temporal,
    leading_text,
    lit,
    name_columns,
    numbered_description,
    person_name,
    quote,
    row_name,
    table_sql,
)
from services.sql.linker._references import grouped_rows
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._by_agent import by_agent
from services.sql.linker.clauses._cues import DIMENSION_NOUNS, PLACING, RELATIVE
from services.sql.linker.clauses._full_names import full_names
from services.sql.linker.clauses._reading import Condition, Decline, Item, Rank, Read, Reading
from services.sql.linker.clauses._referred import said_of_columns
from services.sql.linker.clauses._rows_of import hold_to_rows
from services.sql.words import measure_name, name_words


def make_plan(reading: Reading, read: Read) -> Plan:
    ctx = reading.ctx
    hold_to_rows(reading, read, ctx.graph)
    entity = _owner_of_items(read) or read.entity
    if entity is None:
        entity = _entity_of_items(read)
    if entity is None:
        raise Decline("the question names no table")
    read.mention_table(entity)
    plan = Plan(distinct=read.distinct and read.kind != "count")
    resolve = _Resolver(read, entity, _referenced(ctx, entity), ctx.graph)
    for item in read.items:
        _add_item(ctx, plan, resolve, item, distinct=read.distinct)
    resolve.shown = plan  # what the plan shows, which no stored value is placed on
    resolved: list[tuple[Col, Condition]] = []
    named = full_names(read.conditions)  # "Jane Smith": both words one row's name
    named |= {k: c for k, c in by_agent(reading, read.conditions).items() if k not in named}
    for condition in read.conditions:
        if id(condition) in named:
            resolved.append((named[id(condition)], condition))
            continue
        # "a cat that is age 3": a condition said of the row the previous one picked
        # (a pet's age, not the student's)
        before = resolved[-1] if resolved else None
        resolve.near = (
            before[0].table
            if before is not None and _said_of(reading, before[1].end, condition.start)
            else _relative_head(reading, condition.start)
        )
        resolved.append((resolve.condition(condition), condition))
    resolve.near = None
    for col, condition in resolved:
        plan.filters.append((col, _condition_sql(ctx, col, condition)))
    _no_row_meets_both(ctx, resolved)
    for group in read.ors:
        alternatives = []
        for condition in group:
            col = resolve.condition(condition)
            alternatives.append((col, _condition_sql(ctx, col, condition)))
        plan.ors.append(alternatives)
    for mentions in read.groups:
        _add_group(ctx, plan, resolve, mentions, reading)
    for counted in read.counted:
        plan.having.append((Measure("COUNT", table=counted.table, label=counted.table.name),
                            counted.op, counted.number))  # fmt: skip
        if counted.table is not entity and not plan.dims:
            plan.entity = entity
            plan.dims += [Dim(c) for c in _labels(ctx, entity, grouped=True)]
        elif counted.table is not entity:
            plan.entity = entity if any(d.col.table is entity for d in plan.dims) else None
    for rank in read.ranks:
        _add_rank(ctx, plan, resolve, rank, limit=read.limit or rank.limit)
    for mentions, descending in read.order:
        target = _target(plan, resolve.column(mentions))
        plan.order.append((target, descending))
    if read.order_items is not None:
        if not plan.dims and not plan.measures:
            raise Decline("an order of nothing")
        plan.order.append(("d0" if plan.dims else "m0", read.order_items))
    if read.head_limit and not plan.order:
        raise Decline("how many rows to give, but ranked by nothing")
    if read.limit:
        plan.limit = read.limit
    for table, conditions in read.anti:
        if table is entity:
            # "singers that are not from France": one value said of the rows themselves
            # is left out, as "other than France" is
            if len(conditions) != 1 or conditions[0].op != "=" or not conditions[0].mentions:
                raise Decline("the rows the question lists cannot lack themselves")
            col = resolve.condition(conditions[0])
            if col.table is not entity:
                raise Decline("the rows the question lists cannot lack themselves")
            said = replace(conditions[0], op="<>")
            plan.filters.append((col, _condition_sql(ctx, col, said)))
            continue
        _add_absent(ctx, plan, entity, table, conditions)
    used = _tables_used(plan) | {t.qualified for t in plan.anti}
    used |= {t.qualified for t, _ in read.anti}
    had = {t.qualified for t in read.semi}  # "that have a …": the rows' restriction, said
    for table in read.tables + read.semi:
        if table.qualified not in used and table is not entity:
            if table.qualified not in had and said_of_columns(reading, used, table):
                continue  # its word names the rows' own column: no restriction asked
            plan.semi.append(table)
            used.add(table.qualified)
    if not plan.dims and not plan.measures:
        raise Decline("the question asks for nothing the reader placed")
    _identified(ctx, plan)
    if not plan.measures and not plan.having and not plan.limit:
        # rows of the entity listed through many related rows: each row once
        plan.distinct = plan.distinct or fans_out(
            ctx.graph, entity, _tables_used(plan) | {t.qualified for t in plan.semi}
        )
    return plan


def _owner_of_items(read: Read) -> TableInfo | None:
    """The one table every shown column phrase can mean a column of ("paragraph texts for
    the document ..." lists paragraphs, whatever table comes next; in "the id and name of
    the document" only ``documents`` has both)."""
    common: set[str] | None = None
    tables: dict[str, TableInfo] = {}
    for item in read.items:
        if item.func == "COUNT" or item.label:
            return None
        if item.table is not None:
            owners = {item.table.qualified}
            tables[item.table.qualified] = item.table
        else:
            owners = set()
            for m in item.mentions:
                if m.col is not None:
                    owners.add(m.col.table.qualified)
                    tables[m.col.table.qualified] = m.col.table
        if not owners:
            return None
        common = owners if common is None else common & owners
    return tables[next(iter(common))] if common is not None and len(common) == 1 else None


def _entity_of_items(read: Read) -> TableInfo | None:
    """With no table named, the table the most phrases can mean a column of (items,
    groups, conditions, orders): "the average age for each type of pet" is about pets,
    the one table holding both an age and a type; a tie is no answer."""
    if read.tables:
        return read.tables[0]
    phrases: list[list[Mention]] = [item.mentions for item in read.items if item.mentions]
    phrases += read.groups + [c.mentions for c in read.conditions]
    phrases += [mentions for mentions, _ in read.order] + [r.mentions for r in read.ranks]
    votes: dict[str, int] = {}
    first: dict[str, TableInfo] = {}
    for mentions in phrases:
        for table in {m.col.table.qualified: m.col.table for m in mentions if m.col}.values():
            votes[table.qualified] = votes.get(table.qualified, 0) + 1
            first.setdefault(table.qualified, table)
    for item in read.items:
        if item.table is not None:
            votes[item.table.qualified] = votes.get(item.table.qualified, 0) + 1
            first.setdefault(item.table.qualified, item.table)
    if not votes:
        return None
    best = max(votes.values())
    winners = [name for name, n in votes.items() if n == best]
    return first[winners[0]] if len(winners) == 1 else None


class _Resolver:
    """Which column an ambiguous phrase means: one of the entity, then of a table the
    question names, then the only one; a tie is a refusal, never a guess."""

    def __init__(
        self,
        read: Read,
        entity: TableInfo,
        referenced: Sequence[TableInfo] = (),
        graph: JoinGraph | None = None,
    ) -> None:
        self.read = read
        self.entity = entity
        self.graph = graph
        self.near: TableInfo | None = None  # the table a relative clause speaks of
        self.shown: Plan | None = None  # the plan, once its outputs are added
        # the rows each entity row refers to (one each): their columns are the entity's
        # too ("poker players taller than 200": a player is a person, with a height)
        self.referenced = referenced

    def _rank(self, col: Col) -> float:
        if col.table is self.near:
            return 3.0
        if col.table is self.entity:
            return 2.0
        if col.table in self.read.tables:
            return 1.0
        return 0.0

    def column(self, mentions: Sequence[Mention]) -> Col:
        cols = [(m.score + self._rank(m.col), m.col) for m in mentions if m.col is not None]
        if not cols:
            raise Decline("a phrase names no column")
        cols.sort(key=lambda p: -p[0])
        best = cols[0]
        rivals = [c for s, c in cols[1:] if abs(s - best[0]) < 1e-9 and c.key != best[1].key]
        if rivals and self.graph is not None:
            # ``has_pet.petid`` holds ``pets.petid``: one value, said twice; the key it is
            same = [best[1], *rivals]
            keys = [c for c in same if all(c is o or self._holds(o, c) for o in same)]
            if len(keys) == 1:
                return keys[0]
        if rivals:
            raise Decline(
                f"{best[1].column.name} could be a column of {best[1].table.name} or of "
                f"{rivals[0].table.name}"
            )
        return best[1]

    def _holds(self, child: Col, parent: Col) -> bool:
        """``child`` is a reference to ``parent`` (a key joined to it)."""
        assert self.graph is not None
        return any(
            e.child == child.table.qualified
            and e.parent == parent.table.qualified
            and e.child_columns == (child.column.name,)
            and e.parent_columns == (parent.column.name,)
            for e in self.graph.edges_of(child.table.qualified)
        )

    def _echoes(self, col: Col) -> bool:
        """``col`` is the one column the plan shows (``Plan.shown_alone``)."""
        alone = self.shown.shown_alone() if self.shown is not None else None
        return alone is not None and col.key == alone.key

    def dimension(self, word: str) -> Col:
        tables = [self.entity, *(t for t in self.read.tables if t is not self.entity)]
        tables += [t for t in self.referenced if t not in tables]
        # a column called just that, of any table in scope, before one that has the word
        # in its name ("concerts in 2014": ``concert.year``, not ``song_release_year``)
        nouns = DIMENSION_NOUNS.get(word, (word,))
        exact = [Col(t, c) for t in tables for c in t.columns if c.name.lower() in nouns]
        if len(exact) == 1:
            return exact[0]
        # the word as a whole part of the name (``song_release_year``, ``ReleaseYear``),
        # never the end of another word: ``average`` says no age
        for table in tables:
            found = [c for c in table.columns if set(nouns) & set(name_words(c.name))]
            if len(found) == 1:
                return Col(table, found[0])
        raise Decline(f"no column says {word!r}")

    def month(self) -> Col:
        """The stored month a month said without a year bounds (``_months``): the rows'
        table's where it stores one, else the one table in scope that does."""
        tables = [self.entity, *(t for t in self.read.tables if t is not self.entity)]
        tables += [t for t in self.referenced if t not in tables]
        parts = [p for t in tables if t is not None and (p := calendar_part(t, "month"))]
        if self.entity is not None and parts and parts[0].table is self.entity:
            return parts[0]
        if len(parts) != 1:
            raise Decline("no one table in scope stores the month")
        return parts[0]

    def condition(self, condition: Condition) -> Col:
        if condition.col is not None:
            return condition.col
        values = [m for m in condition.mentions if m.kind == "value"]
        columns = [m for m in condition.mentions if m.kind == "column"]
        if condition.dimension == "name" and not columns:
            labels = [c for c in name_columns(self.entity)]
            if len(labels) != 1:
                raise Decline("a name, but no one name column")
            return labels[0]
        if condition.dimension == "month" and not columns:
            return self.month()
        if condition.dimension and not columns:
            return self.dimension(condition.dimension)
        stored = [m for m in values if m.col is not None]
        if columns:
            col = self.column(columns)
            if stored and not any(m.col is not None and m.col.key == col.key for m in stored):
                raise Decline(f"the value is not one of {col.column.name}")
            return col
        if stored:
            # a value the shown column holds as well as another is the other's: equal to
            # the one column shown, it would only be returned as itself
            elsewhere = [m for m in stored if m.col is not None and not self._echoes(m.col)]
            return self.column(elsewhere or stored)
        raise Decline("a quoted value, but no column says what it is")


def _relative_head(reading: Reading, start: int) -> TableInfo | None:
    """The table named just before a relative word that opens the condition at
    ``start`` ("flights flown by planes *whose* year is before 1960", "planes *with*
    year …"): the condition is said of that table's rows, so of two joined tables that
    both hold the column (a flight's year, a plane's) it is the one meant. None when no
    table is named there. A preposition that places rows at a value works alike ("the
    customers *in* Argentina", "suppliers *from* Japan"): the value is said of the rows
    of the table named just before it, so of two tables storing it ('Argentina' in
    ``customers.country`` and ``orders.ship_country``) that table's column is meant."""
    opening = RELATIVE | PLACING
    k = start - 1 if reading.low(start) not in opening else start
    if reading.low(k) not in opening:
        return None
    for j in range(k - 1, max(-1, k - 4), -1):
        tables = [m for m in reading.longest(j, ("table",)) if m.end == k and m.table]
        if tables:
            return tables[0].table
    return None


def _said_of(reading: Reading, end: int, start: int) -> bool:
    """Only a relative pronoun and a verb of being or having between two conditions
    ("cat *that is* age 3"): the second is said of what the first picked."""
    between = [reading.low(k) for k in range(end, start)]
    return bool(between) and bool(RELATIVE & set(between)) and set(between) <= RELATIVE | {
        "is", "are", "was", "were", "has", "have", "had", "a", "an", "the"
    }  # fmt: skip


def _referenced(ctx: LinkContext, entity: TableInfo) -> list[TableInfo]:
    """The tables ``entity``'s rows refer to by a key (declared or inferred), each row to
    one row of each."""
    parents = {
        e.parent for e in ctx.graph.edges_of(entity.qualified) if e.child == entity.qualified
    }
    return [t for t in ctx.catalog.tables if t.qualified in parents and t is not entity]


def _labels(ctx: LinkContext, table: TableInfo, *, grouped: bool = False) -> list[Col]:
    """The columns that name a row of ``table`` in an answer: its one name column, a
    person's first and last name, else its key. ``grouped``: the answer has one row per
    row of ``table`` (the statement groups by its key), so name columns that tie (two
    "…name" columns, none called just ``name``) are all shown: which one names the row
    is not for the engine to guess, and showing both changes no row."""
    if grouped and (found := grouped_labels(table)):
        return found  # the one rule a regrouped follow-up shows an entity by too
    if not any(c.name.lower() == "name" for c in table.columns):
        person = person_name(table)
        if person:
            return person
    names = name_columns(table)
    if len(names) == 1:
        return names
    if not names and (leading := leading_text(table) or numbered_description(table)):
        return leading
    if len(names) > 1 and (named := row_name(table, names)):
        return named  # several names tie: the one unique per row, first declared
    if table.primary_key:
        key = table.column(table.primary_key[0])
        if key is not None:
            return [Col(table, key)]
    raise Decline(f"nothing names a row of {table.name}")


def _existence(measure: Measure, op: str, number: int) -> bool:
    """Whether a HAVING test says only that a group has a row: a plain count at least 1."""
    return (
        measure.func in ("COUNT", "COUNT_DISTINCT")
        and measure.filter is None
        and ((op == ">=" and number == 1) or (op == ">" and number == 0))
    )


def _identified(ctx: LinkContext, plan: Plan) -> None:
    """A row of an entity table shown as a group of the answer is identified by its key
    beside its name: the statement groups by the key already, so the rows are the same,
    but a name that repeats across rows (two stadiums called alike) is told apart, and a
    reader can follow the row to the table. Only where what is shown of the entity is its
    name (a key already shown, or an attribute such as its country, is left as asked);
    a listing without groups gets its key from ``results.with_labels``, on the statement
    as composed, where DISTINCT (under which a key could change the rows) is decided."""
    entity = plan.entity
    if entity is None or not (plan.measures or plan.having) or len(entity.primary_key) != 1:
        return
    if not plan.measures and all(_existence(m, op, n) for m, op, n in plan.having):
        # "the teachers that have at least one course arrangement": the groups are the
        # rows having a match, listed as such (``results.with_semijoins``), shown as a
        # listing shows them (``results.with_labels``), not as groups
        return
    key = entity.column(entity.primary_key[0])
    shown = [d for d in plan.dims if d.col.table is entity and not d.grain]
    if key is not None and plan.limit and [d.col.column for d in shown] == [key]:
        # a ranking's rows shown by their code alone ("which template type has the
        # most paragraphs?"): what the code means goes beside it, as a grouped answer
        # shows that entity (``grouped_labels``); one value per key, so no group splits
        present = {d.col.key for d in plan.dims}
        described = [c for c in code_description(entity) if c.key not in present]
        after = plan.dims.index(shown[0]) + 1
        plan.dims[after:after] = [Dim(c) for c in described]
        plan.order = [
            (f"d{int(t[1:]) + len(described)}" if t.startswith("d") and int(t[1:]) >= after
             else t, d)
            for t, d in plan.order
        ]  # fmt: skip
        return
    if key is None or not shown or any(d.col.column is key for d in shown):
        return
    try:
        labels = {c.key for c in _labels(ctx, entity, grouped=True)}
    except Decline:
        return
    if not all(d.col.key in labels for d in shown):
        return
    # every name a grouped entity is shown by ("Which 2 car makers have the most
    # models?" shows ``maker`` beside ``fullname``, as "How many models does each car
    # maker have?" does): which names were read before the ranking grouped the answer
    # must not decide the columns (a column the key decides splits no group). Only a
    # ranking's cut rows: groups kept by a condition (HAVING) keep the names as read, as
    # the output check judges them (shown more, a misread "at least 2 models and more
    # than 3 car makers? List the id and the maker" passed it, a confident wrong)
    after = plan.dims.index(shown[-1]) + 1
    present = {d.col.key for d in plan.dims}
    missing = [c for c in _labels(ctx, entity, grouped=True) if c.key not in present]
    missing = [c for c in missing if c.column is not key] if plan.limit else []
    plan.dims[after:after] = [Dim(c) for c in missing]
    plan.order = [
        (f"d{int(t[1:]) + len(missing)}" if t.startswith("d") and int(t[1:]) >= after else t, d)
        for t, d in plan.order
    ]
    # before the names, as every reading shows an entity (its key, then what names it);
    # ties at a cut are still broken by the name (keys sort last there)
    at = plan.dims.index(shown[0])
    plan.dims.insert(at, Dim(Col(entity, key)))
    plan.order = [
        (f"d{int(t[1:]) + 1}" if t.startswith("d") and int(t[1:]) >= at else t, desc)
        for t, desc in plan.order
    ]


def _add_item(
    ctx: LinkContext, plan: Plan, resolve: _Resolver, item: Item, *, distinct: bool
) -> None:
    if item.func == "COUNT" and item.table is not None:
        func = "COUNT_DISTINCT" if distinct else "COUNT"
        plan.measures.append(Measure(func, table=item.table, label=item.table.name))
        return
    if item.table is not None:
        plan.dims += [Dim(c) for c in _labels(ctx, item.table)]
        return
    if item.label:
        cols = _labels(ctx, resolve.entity)
        if item.func:
            plan.measures.append(Measure(item.func, col=cols[0], label=cols[0].column.name))
        else:
            plan.dims += [Dim(c) for c in cols]
        return
    col = resolve.column(item.mentions)
    if not item.func and (
        _summed_per_group(ctx, resolve.read, col) or _summed_over_rows(ctx, resolve.read, col)
    ):
        plan.measures.append(Measure("SUM", col=col, label=col.column.name))
        return
    if item.func == "COUNT_DISTINCT":
        plan.measures.append(Measure("COUNT_DISTINCT", col=col, label=col.column.name))
    elif item.func:
        if item.func in ("AVG", "SUM") and not is_number(col.column.data_type):
            raise Decline(f"{col.column.name} holds no numbers")
        plan.measures.append(Measure(item.func, col=col, label=col.column.name))
    else:
        plan.dims.append(Dim(col))


def _summed_per_group(ctx: LinkContext, read: Read, col: Col) -> bool:
    """ "How many tickets were bought at each museum?" with tickets stored as a count per
    visit (``visit.num_of_ticket``): a count the rows store, asked "how many" for each row
    of a table those rows refer to, is their sum per group. Listed as it is, each museum
    would come once per visit with one visit's tickets, not one answer per museum. Only a
    column whose name says it counts (``num_of_``, ``_count``), in a table whose rows
    refer to the grouped table (many per group)."""
    if read.kind != "count" or not is_number(col.column.data_type):
        return False
    if not measure_name(col.column.name):
        return False
    grouped = {m.table.qualified for mentions in read.groups for m in mentions if m.table}
    return any(
        e.child == col.table.qualified and e.parent in grouped
        for e in ctx.graph.edges_of(col.table.qualified)
    )


def _summed_over_rows(ctx: LinkContext, read: Read, col: Col) -> bool:
    """ "How many tickets were bought at museums that opened after 2009?", no grouping:
    the count the rows store, added up over the rows asked about, one number, as a
    "how many" question asks. Listed, the answer was one visit's tickets per row. Only a
    column whose name says it counts, in a table whose rows refer to others (the record
    of an event, no named thing of its own: "how many staff does Plaza Museum have?" or
    "how many rooms does each of them have?" stays each row's own number)."""
    if read.kind != "count" or read.groups or not is_number(col.column.data_type):
        return False
    if not measure_name(col.column.name):
        return False
    table = col.table
    named = any(
        {"name", "title"} & set(ctx.vocab.column_words[(table.qualified, c.name)])
        for c in table.columns
        if not is_number(c.data_type)
    )
    if len(table.primary_key) == 1 and named:
        return False  # a thing of its own, named by its rows (a property's room count)
    return any(e.child == table.qualified for e in ctx.graph.edges_of(table.qualified))


def _attributes_only(ctx: LinkContext, plan: Plan, entity: TableInfo) -> bool:
    """Whether the rows shown are only values of columns of ``entity`` that name none of
    its rows ("Which manufacturer has the most flights?": ``planes.manufacturer``): the
    values are ranked, each over every row holding it, so the grouping is theirs, not
    one group per ``entity`` row (which would rank single planes and show their maker)."""
    if not plan.dims or any(d.col.table is not entity or d.grain for d in plan.dims):
        return False
    try:
        labels = {c.key for c in _labels(ctx, entity)}
    except Decline:
        labels = set()
    keys = set(entity.primary_key)
    return not any(d.col.key in labels or d.col.column.name in keys for d in plan.dims)


def _add_group(
    ctx: LinkContext,
    plan: Plan,
    resolve: _Resolver,
    mentions: list[Mention],
    reading: Reading,
) -> None:
    tables = _nearest_groups(ctx, resolve.entity, mentions)
    if tables and _rate_over_own_rows(plan, tables[0]):
        return
    found: Col | TableInfo = (
        tables[0]
        if tables
        else _by_reference(ctx, reading, mentions, resolve.column(mentions), resolve.entity)
    )
    if isinstance(found, TableInfo):
        resolve.read.mention_table(found)
        plan.entity = found
        if not any(d.col.table is found for d in plan.dims):
            plan.dims += [Dim(c) for c in _labels(ctx, found, grouped=True)]
        return
    if not any(d.col.key == found.key for d in plan.dims):
        plan.dims.append(Dim(found))


def _rate_over_own_rows(plan: Plan, table: TableInfo) -> bool:
    """Whether the group names the very rows a column's aggregate reads ("the average
    number of tickets per visit" over ``visit.num_of_ticket``): one group per measured
    row makes every group's figure that row's own value, and a table keyed by two
    references (a visit: museum and visitor) was grouped by the first of them, the
    museum. The figure asked is a rate over those rows: one aggregate, no grouping (as
    ``_shape.link_groups`` reads "amount per treatment")."""
    return bool(plan.measures) and all(
        m.col is not None
        and m.col.table.qualified == table.qualified
        and m.func in ("AVG", "SUM", "MIN", "MAX")
        for m in plan.measures
    )


def _by_reference(
    ctx: LinkContext, reading: Reading, mentions: list[Mention], col: Col, entity: TableInfo
) -> Col | TableInfo:
    """ "each destination airport": the span names ``airports.dst`` (the daylight-saving
    flag) only by letters "destination" holds in order, and wins on the table word
    "airport" alone, which the mention of ``flights.dest`` (a whole prefix, holding the
    airports' keys) lacks. The words after the table's are then read as a reference to
    it, as the older linker's groups do (``grouped_rows``): the flights grouped by
    where they went, not by a one-letter flag. A column said well by its own name
    ("each dst") stays. "per shipper of orders" names ``orders.shipper_id`` only by
    the table it points at: the shippers' rows, as "per shipper" alone (``entity``, the
    rows the question is about, is the measured rows' table)."""
    said = [m for m in mentions if m.col is not None and m.col.key == col.key and m.with_table]
    if not said:
        return col
    words = [t.stem for t in reading.tokens[said[0].start : said[0].end]]
    found = grouped_rows(ctx, words, col, {entity.qualified})
    if isinstance(found, Col) and found is not col:
        # the table word says what the reference points at: read, not left unexplained
        ctx.known.update(w for w in words if ctx.vocab.table_score([w], col.table) > 0)
    return found


def _nearest_groups(
    ctx: LinkContext, entity: TableInfo, mentions: list[Mention]
) -> list[TableInfo]:
    """The table "each X" groups by, where several tables' names say X equally well ("each
    type": ``ref_property_types`` and ``ref_feature_types``): the one fewest joins from
    the rows counted. The nearest is the one the rows themselves refer to (a property's
    type); a farther one is reached through other tables, often through a child table
    whose many rows per counted row multiply the count (a property's features' types).
    Equally near is a tie, and a tie is no answer."""
    found = [m for m in mentions if m.table is not None]
    if not found:
        return []
    top = max(m.score for m in found)
    tied: dict[str, TableInfo] = {}
    for m in found:
        if m.table is not None and abs(m.score - top) < 1e-9:
            tied.setdefault(m.table.qualified, m.table)
    if len(tied) < 2:
        return [m.table for m in found if m.table is not None]
    hops: dict[str, int] = {}
    for table in tied.values():
        path = ctx.graph.path(entity.qualified, table.qualified)
        hops[table.qualified] = len(path) if path is not None else len(ctx.catalog.tables)
    nearest = min(hops.values())
    closest = [t for t in tied.values() if hops[t.qualified] == nearest]
    if len(closest) > 1:
        raise Decline(f"each {closest[0].name} or each {closest[1].name}: equally near")
    return closest


def _target(plan: Plan, col: Col) -> str:
    """The output slot ordering by ``col`` (added to the output when not shown)."""
    for i, d in enumerate(plan.dims):
        if d.col.key == col.key and not d.grain:
            return f"d{i}"
    for i, m in enumerate(plan.measures):
        if m.col is not None and m.col.key == col.key and m.func in ("MAX", "MIN", "AVG", "SUM"):
            return f"m{i}"
    if plan.measures:
        raise Decline("ordering grouped rows by a column that is not grouped")
    plan.dims.append(Dim(col))
    return f"d{len(plan.dims) - 1}"


def _add_rank(ctx: LinkContext, plan: Plan, resolve: _Resolver, rank: Rank, *, limit: int) -> None:
    entity = resolve.entity
    if rank.count_of is not None or rank.by_count:
        if rank.by_count:
            col = resolve.column(rank.mentions) if rank.mentions else None
            if col is None:
                shown = [d for d in plan.dims]
                if len(shown) != 1:
                    raise Decline("most common, but of what")
                col = shown[0].col
            if not any(d.col.key == col.key for d in plan.dims):
                plan.dims.append(Dim(col))
            plan.measures.append(Measure("COUNT", table=col.table, label="count"))
        else:
            assert rank.count_of is not None
            counted = Measure("COUNT", table=rank.count_of, label=rank.count_of.name)
            ranked = _ranked(ctx, plan, rank)
            plan.measures.append(counted)
            if ranked is not None:
                plan.entity = ranked
                _ties_of(ctx, plan, ranked)
            elif rank.count_of is not entity and not _attributes_only(ctx, plan, entity):
                plan.entity = entity
            if not plan.dims:
                grouped = plan.entity is entity
                plan.dims += [Dim(c) for c in _labels(ctx, entity, grouped=grouped)]
        plan.order.append((f"m{len(plan.measures) - 1}", rank.descending))
        plan.limit = limit
        return
    col = resolve.dimension(rank.dimension) if rank.dimension else resolve.column(rank.mentions)
    if plan.measures:
        raise Decline("a superlative over grouped rows")
    if _per_entity(ctx, plan, entity, col, rank, limit=limit):
        if rank.ranked is entity:
            _ties_of(ctx, plan, entity)
        plan.limit = limit
        return
    plan.order.append((_target(plan, col), rank.descending))
    plan.limit = limit


def _ranked(ctx: LinkContext, plan: Plan, rank: Rank) -> TableInfo | None:
    """The table whose rows a count superlative ranks, where the question names it ("the
    document with the most paragraphs", "the user who had the most sessions") and asks
    for what those rows hold ("which template does it use?", "the email of"): each of its
    rows is one group, and what is shown is that row's attribute, or the row its key
    refers to. Grouped by the attribute instead, the ranking counts every row holding
    it (all the paragraphs of all documents of a template; every user sharing an email)
    and is right only where the attribute happens to be unique. None where no table is
    named, or what is shown is the ranked rows' own names (the ranking is theirs
    already); a refusal where what is shown is not one value per ranked row (a column of
    rows that refer to it would split each group)."""
    ranked = rank.ranked
    if ranked is None or ranked is rank.count_of or plan.measures or not plan.dims:
        return None
    if any(d.grain for d in plan.dims):
        return None
    try:
        labels = {c.key for c in _labels(ctx, ranked, grouped=True)}
    except Decline:
        labels = set()
    if all(d.col.table is ranked and d.col.key in labels for d in plan.dims):
        return None
    parents = {t.qualified for t in _referenced(ctx, ranked)} | {ranked.qualified}
    if any(d.col.table.qualified not in parents for d in plan.dims):
        raise Decline(f"ranked {ranked.name} rows, but shown what is not one per row")
    return ranked


def _ties_of(ctx: LinkContext, plan: Plan, ranked: TableInfo) -> None:
    """Ties at the cut broken as the ranking of ``ranked``'s own rows breaks them (by
    their names, then their key), not by the attribute shown: "the email of the user
    with the most sessions" is the email of the user "which user had the most sessions?"
    answers, whatever the emails sort as. Where those columns are all shown the listed
    columns break ties already."""
    try:
        labels = [c for c in _labels(ctx, ranked, grouped=True) if not is_key(c)]
    except Decline:
        labels = []
    keys = [Col(ranked, k) for k in (ranked.column(n) for n in ranked.primary_key) if k]
    ties = labels + [k for k in keys if k.key not in {c.key for c in labels}]
    shown = {d.col.key for d in plan.dims if not d.grain}
    if ties and not all(c.key in shown for c in ties):
        plan.ties = ties


def _per_entity(
    ctx: LinkContext, plan: Plan, entity: TableInfo, col: Col, rank: Rank, *, limit: int
) -> bool:
    """ "Which 4 tickers had the most shares traded?" ranks tickers by a column of the rows
    that refer to them (``transactions.shares``, many per ticker). Listed as they are,
    each ticker comes once per transaction, and the limit, which counts tickers, counts
    transactions instead. So each entity is one group: an amount ("the most shares") is
    its rows' sum; a value ("the 3 highest prices") its greatest (or least) one, which
    for a single row is the listing's own first row and is left to it. An amount of
    what no sum adds up (a key, a date, text) is refused. False where the column's rows
    are not many per entity row, or the answer shows more than the entity."""
    if col.table is entity or not fans_out(ctx.graph, entity, {col.table.qualified}):
        return False
    if not rank.amount and limit <= 1:
        return False
    if any(d.col.table is not entity or d.grain for d in plan.dims):
        raise Decline("ranked by related rows, with more than the ranked rows shown")
    quantity = is_number(col.column.data_type) and not is_key(col)
    if rank.amount and not quantity:
        raise Decline(f"an amount of {col.column.name}, which adds up to nothing")
    func = "SUM" if rank.amount else ("MAX" if rank.descending else "MIN")
    plan.entity = entity
    if not plan.dims:
        plan.dims += [Dim(c) for c in _labels(ctx, entity, grouped=True)]
    plan.measures.append(Measure(func, col=col, label=col.column.name))
    plan.order.append((f"m{len(plan.measures) - 1}", rank.descending))
    return True


def _add_absent(
    ctx: LinkContext, plan: Plan, entity: TableInfo, table: TableInfo, conditions: list[Condition]
) -> None:
    """Rows of ``entity`` with no related row of ``table`` (meeting ``conditions``): a
    direct reference without conditions is the composer's anti-join; otherwise NOT
    EXISTS over the join path, the conditions inside it."""
    path = ctx.graph.path(entity.qualified, table.qualified)
    if not path:
        raise Decline(f"nothing relates {entity.name} and {table.name}")
    if not conditions and len(path) == 1:
        plan.anti.append(table)
        return
    sub = _Resolver(Read("list", tables=[table]), table)
    tables = [entity.qualified]
    for edge in path:
        tables.append(edge.other(tables[-1]))
    aliases = {name: f"s{k}" for k, name in enumerate(tables[1:], 1)}
    first = path[0]
    joins = ""
    for k, edge in enumerate(path[1:], 2):
        there = tables[k]
        on = " AND ".join(f"s{k}.{quote(a)} = s{k - 1}.{quote(b)}" for a, b in edge.pairs(there))
        joins += f" JOIN {table_sql(_table(ctx, there))} AS s{k} ON {on}"
    where = [f"s1.{quote(a)} = {{c}}" for a, _ in first.pairs(tables[1])]
    if len(first.pairs(tables[1])) != 1:
        raise Decline("a composite key to an absent row")
    for condition in conditions:
        col = sub.condition(condition)
        if col.table.qualified not in aliases:
            raise Decline(f"{col.column.name} is not on the way to {table.name}")
        text = _condition_sql(ctx, col, condition)
        where.append(
            text.replace("{c}", f"{aliases[col.table.qualified]}.{quote(col.column.name)}")
        )
    ((key, _),) = first.pairs(entity.qualified)
    key_col = entity.column(key)
    assert key_col is not None
    sql = f"NOT EXISTS (SELECT 1 FROM {table_sql(_table(ctx, tables[1]))} AS s1{joins} WHERE {' AND '.join(where)})"
    plan.filters.append((Col(entity, key_col), sql))
    plan.inner += [_table(ctx, name) for name in tables[1:]]
    said = [condition_words(_condition_sql(ctx, c, condition), c.column.name)
            for condition in conditions for c in [sub.condition(condition)]]  # fmt: skip
    plan.absent.append(table.name + (" with " + " and ".join(said) if said else ""))


def _table(ctx: LinkContext, name: str) -> TableInfo:
    table = ctx.catalog.table(name)
    assert table is not None
    return table


def _condition_sql(ctx: LinkContext, col: Col, condition: Condition) -> str:
    values = [m for m in condition.mentions if m.kind == "value"]
    if condition.value == "AVERAGE":
        if not is_number(col.column.data_type):
            raise Decline(f"{col.column.name} holds no numbers")
        average = f"SELECT AVG(a.{quote(col.column.name)}) FROM {table_sql(col.table)} AS a"
        return f"{{c}} {condition.op} ({average})"
    if values:
        value = next((m.value for m in values if m.col is not None and m.col.key == col.key),
                     values[0].value)  # fmt: skip
        if is_number(col.column.data_type):
            try:
                float(value)
            except ValueError:
                raise Decline(f"{col.column.name} holds numbers, not {value!r}") from None
            return f"{{c}} {condition.op} {value}"
        return f"{{c}} {condition.op} {lit(value)}"
    if condition.dimension == "when":
        return _year_sql(col, condition.op, int(condition.value))
    if not is_number(col.column.data_type) and not is_temporal(col.column.data_type):
        raise Decline(f"{col.column.name} holds no numbers to compare")
    if is_temporal(col.column.data_type):
        raise Decline("a number compared with a date")
    return f"{{c}} {condition.op} {condition.value}"


def _no_row_meets_both(ctx: LinkContext, conditions: list[tuple[Col, Condition]]) -> None:
    """ "visited both a museum opened before 2009 and one opened after 2011", "opened
    before 2009 and opened after 2011": two conditions on one column that no row meets
    together ask for rows meeting each in turn (a set intersection the reader does not
    compose); ANDed they answer nothing, so the question is refused."""
    by_column: dict[tuple[str, str], list[Condition]] = {}
    for col, condition in conditions:
        by_column.setdefault(col.key, []).append(condition)
    for said in by_column.values():
        if len(said) < 2:
            continue
        if re.search(r"\bboth\b", ctx.low):
            raise Decline("'both' of two conditions on one column: rows meeting each")
        numbers = [
            (c.op, float(c.value)) for c in said if re.fullmatch(r"-?\d+(?:\.\d+)?", c.value)
        ]
        below = [v for op, v in numbers if op in ("<", "<=")]
        above = [v for op, v in numbers if op in (">", ">=")]
        equal = {v for op, v in numbers if op == "="}
        if (below and above and max(above) >= min(below)) or len(equal) > 1:
            raise Decline("two conditions on one column that no row meets together")


def _year_sql(col: Col, op: str, year: int) -> str:
    """A year said of a date or year column: the year's dates (half-open) for a date; the
    number, or its text where the column holds text, for a year."""
    if is_temporal(col.column.data_type):
        start, end = lit(f"{year}-01-01"), lit(f"{year + 1}-01-01")
        return {
            "=": f"{{c}} >= {start} AND {{c}} < {end}",
            "<": f"{{c}} < {start}",
            ">": f"{{c}} >= {end}",
            ">=": f"{{c}} >= {start}",
        }[op]
    value = str(year) if is_number(col.column.data_type) else lit(str(year))
    return f"{{c}} {op} {value}"


def _tables_used(plan: Plan) -> set[str]:
    used = {d.col.table.qualified for d in plan.dims}
    for m in plan.measures:
        if m.col is not None:
            used.add(m.col.table.qualified)
        if m.table is not None:
            used.add(m.table.qualified)
    used |= {c.table.qualified for c, _ in plan.filters}
    used |= {c.table.qualified for group in plan.ors for c, _ in group}
    used |= {h[0].table.qualified for h in plan.having if h[0].table is not None}
    return used
