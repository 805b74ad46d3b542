"""The shape of the result: grouping ("per X", "by X", "for each X"), ordering (by what,
which way) and limits ("top 5", "the 3 highest")."""

from __future__ import annotations

import re

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._dates import (
    GRAINS,
    RECENCY,
    calendar_part,
    date_column,
    past_base,
    verb_names_part,
)
from services.sql.linker._lookup import find_column, label_columns
from services.sql.linker._measures import read_arith, read_measure
from services.sql.linker._plan import (
    Dim,
    LinkError,
    Measure,
    Plan,
    is_key,
    only_table,
    refines,
    same_measure,
)
from services.sql.linker._references import grouped_rows
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses import PREPOSITIONS
from services.sql.words import (
    IRREGULAR_PARTICIPLES,
    KIND_NOUNS,
    STOP_WORDS,
    stem,
)


def read_limit(ctx: LinkContext) -> tuple[int, bool | None]:
    low = ctx.low
    m = re.search(
        r"\b(top|bottom|first|last)\s+(\d{1,4})\b(?!\s+(?:calendar\s+)?(?:day|week|month|quarter|year)s?\b)",
        low,
    )
    if m:
        return int(m.group(2)), m.group(1) in ("top", "first")
    m = re.search(
        r"\b(\d{1,4})\s+(?:\w+\s+)?(most|least|highest|lowest|largest|smallest|best|worst)\b",
        low,
    )
    if m:
        return int(m.group(1)), m.group(2) in ("most", "highest", "largest", "best")
    m = re.search(
        r"\b(?:which|what)\s+(\d{1,4})\b[^?.]*?\b(highest|most|largest|lowest|fewest|least|smallest|best|worst|latest|newest|earliest|oldest)\b",
        low,
    )
    if m:
        return int(m.group(1)), m.group(2) in (
            "highest",
            "most",
            "largest",
            "best",
            "latest",
            "newest",
        )
    m = re.search(
        r"\b(?:which|who)\s+(?:\w+\s+){0,2}?\w+\s+the\s+(highest|most|largest|lowest|fewest|least)\b",
        low,
    )
    if m:
        return 1, m.group(1) in ("highest", "most", "largest")
    m = re.search(r"\bwith the (highest|lowest|most|least)\b", low)
    if m:
        return 1, m.group(1) in ("highest", "most")
    return 0, None


def link_groups(ctx: LinkContext, plan: Plan) -> None:
    for m in re.finditer(
        r"\b(?:per|for each|for every|in each|each|by)\s+(?:of\s+the\s+)?([a-z][a-z0-9 ]*?)(?=[,.?;]|\s+(?:and|in|for|who|that|which|from|between|during|with|where|inclusive|excluding|including|not|over)\b|$)",
        ctx.low,
    ):
        phrase = m.group(1).strip()
        before = ctx.low[: m.start()].split()
        if (
            m.group(0).startswith("by")
            and before
            and (
                before[-1] in _AGENT_PARTICIPLES
                or re.fullmatch(r"[a-z]{3,}ed", before[-1])
                or (
                    before[-1] in IRREGULAR_PARTICIPLES
                    and not re.match(r"(?:each|every)\b", phrase)
                )
            )
        ):
            # "made by customers", "flown by flights" name who did it, not a grouping.
            # "spent by each customer" asks for one value per customer: the participles
            # added from the shared list (ISSUE-45, s61) keep "by each" a grouping (as
            # an agent, a Chinook blind right was lost); the reader's own list and the
            # "-ed" forms keep their reading ("produced by each maker" grouped made a
            # Spider study wrong)
            continue
        each_last = re.match(
            r"(?:last|past|previous)\s+(?:\d+\s+)?(?:calendar\s+)?(day|week|month|quarter|year)s?\b",
            phrase,
        )
        if each_last:
            phrase = each_last.group(1)
        # "in each month of 1996": the grain, its year a window the date reader bounds
        # (``date_filters`` reads "of 1996"); the phrase is the grain alone, as "per
        # month in 1996" is
        grain_of_year = re.fullmatch(
            r"(day|week|month|quarter)s?\s+of\s+(?:the\s+year\s+)?\d{4}", phrase
        )
        if grain_of_year:
            phrase = grain_of_year.group(1)
        if m.group(0).startswith("by") and plan.measures and read_measure(ctx, phrase) is not None:
            continue
        words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
        if not words:
            continue
        grain = GRAINS.get(words[0]) if len(words) == 1 else None
        if grain:
            col = date_column(ctx, plan)
            part = calendar_part(col.table, grain) if col is not None else None
            if part is not None:
                if not any(d.col.key == part.key for d in plan.dims):
                    plan.dims.insert(0, Dim(part))
            elif col is not None and not any(d.grain == grain for d in plan.dims):
                plan.dims.insert(0, Dim(col, grain))
            if col is not None or not plan.measures:
                continue
            # no date to take the grain of ("average weight per year" of ``cars_data``,
            # whose year is a whole-number column): the column the word names, below
        if any(ctx.vocab.column_score(words, d.col) >= 0.5 for d in plan.dims):
            continue
        if not plan.measures:
            continue
        col = find_column(ctx, words)
        tables = ctx.vocab.tables_named(words)
        measured = {m.table.qualified for m in plan.measures if m.table is not None}
        measured |= {m.col.table.qualified for m in plan.measures if m.col is not None}
        if col is not None:
            rows = grouped_rows(ctx, words, col, measured)
            if not isinstance(rows, Col):
                # "each customer placed": the customers, not orders.customer_id
                col, tables = None, [t for t in tables if t[0] is rows]
            else:
                col = rows
        if (
            m.group(0).startswith("per")
            and tables
            and tables[0][0].qualified in measured
            and (col is None or only_table(words, tables, ctx.vocab))
        ):
            # "amount per treatment" is a rate over the measured rows; "price per property
            # type" names a column of them too (``property_type_code``), and groups by it
            continue
        if col is not None and col.table.qualified not in measured:
            col = _on_measured(ctx, words, col, measured, before[-3:])
        if col is not None:
            _named_apart(ctx, phrase, words, col)
        if tables and (col is None or only_table(words, tables, ctx.vocab)):
            plan.entity = tables[0][0]
            for c in label_columns(ctx, tables[0][0]):
                if not any(d.col.key == c.key for d in plan.dims):
                    plan.dims.append(Dim(c))
        elif col is not None:
            plan.dims.append(Dim(col))
    if plan.measures and plan.dims and plan.entity is None:
        # An entity named in the output ("salesperson ID, first name") groups by its key.
        owners = {d.col.table.qualified for d in plan.dims}
        for t in owners:
            table = ctx.catalog.table(t)
            if (
                table
                and table.primary_key
                and any(
                    d.col.column.name == table.primary_key[0] and d.col.table.qualified == t
                    for d in plan.dims
                )
            ):
                plan.entity = table


def _named_apart(ctx: LinkContext, phrase: str, words: list[str], col: Col) -> None:
    """ "per engine type" on ``planes`` with columns ``engine`` and ``type``: the phrase's
    words name two columns of one table, each whole, and the grouping found is one of
    them; which one the user meant ("the type of engine" is ``engine``'s values, "the
    plane's type" is ``type``'s) is not in the words. Refused naming both, not grouped by
    the one that scored higher. Only a phrase whose head is a noun of kinds ("type",
    "kind", "category", "class": ``KIND_NOUNS``) says this: "X type" is the kind of X,
    which a column named X may hold; "model year" is the year, whatever ``model`` holds.
    A column named by the words together (``sbtickertype`` for "ticker type") or by one
    of them while the other names no column of its own ("payment method") is no such
    case."""
    if len(words) < 2 or words[-1] not in KIND_NOUNS:
        return
    chosen = {stem(w) for w in re.findall(r"[a-z]+", col.column.name.lower())}
    for other in col.table.columns:
        name = other.name.lower()
        if name == col.column.name.lower() or not re.fullmatch(r"[a-z]+", name):
            continue
        if stem(name) in words and stem(name) not in chosen:
            raise LinkError(
                f"{phrase!r} may name {col.table.name}.{other.name} or "
                f"{col.table.name}.{col.column.name}",
                phrase=phrase,
            )


def _on_measured(
    ctx: LinkContext, words: list[str], col: Col, measured: set[str], said_before: list[str]
) -> Col:
    """ "the average temperature in each month": ``weather.month`` beside the measured
    ``weather.temp``, not ``flights.month`` two joins away. A column of the measured table
    that the words name as well as the one found groups the measured rows themselves;
    the other is reached by joins the question never asked for, which pair each measured
    row with every row of the other table that shares a key (each reading once per
    flight from its airport). Only an equal or better name is taken: a better-named
    column elsewhere still wins.

    Better named counts the words said just before the grouping word (``said_before``,
    a past form by its base): "orders shipped to each country" names ``orders.ship_country``
    whole ('ship' said as "shipped", 'country' after "each"), where ``customers.country``
    is named by the noun alone: the rows' own column, the place each was shipped to, not
    their customer's."""
    score = ctx.vocab.column_score(words, col)
    found = [
        c
        for c in ctx.vocab.columns
        if c.table.qualified in measured and ctx.vocab.column_score(words, c) >= score - 1e-9
    ]
    if len(found) == 1:
        return found[0]
    said = set(words) | {stem(w) for w in said_before}
    bases = [b for w in said_before if (b := past_base(w)) is not None]

    def named(part: str) -> bool:
        return part in said or any(verb_names_part(b, part) for b in bases)

    own = set(ctx.vocab.column_words.get(col.key, []))
    whole = [
        c
        for c in ctx.vocab.columns
        if c.table.qualified in measured
        and not is_key(c)
        and ctx.vocab.column_score(words, c) > 0
        and not set(ctx.vocab.column_words.get(c.key, [])) <= own
        and all(named(p) for p in ctx.vocab.column_words.get(c.key, []))
    ]
    return whole[0] if len(whole) == 1 else col


def link_ordering(ctx: LinkContext, plan: Plan, desc: bool | None) -> None:
    low = ctx.low
    m = re.search(
        r"\b(?:top|bottom|first)\s+\d+\s+[a-z ]*?\bby\s+([a-z0-9 /*()+-]+?)(?=[,.?;]|\s+(?:and|in|for|who|that|from|between|during|inclusive|with)\b|$)",
        low,
    )
    phrase = m.group(1) if m else ""
    if not phrase:
        m = re.search(
            r"\b(?:order(?:ed)?|sort(?:ed)?|rank(?:ed)?)\s+by\s+(?:the\s+)?([a-z ]+?)(?=[,.?;]|\s+(?:and|in|with|from)\b|$)",
            low,
        )
        phrase = m.group(1) if m else ""
    recency = RECENCY.search(low)
    if not phrase and recency and plan.dims and not plan.measures:
        # "the 5 most recent activities": by the listed rows' own date
        col = date_column(ctx, Plan(dims=plan.dims))
        if col is not None:
            if not any(d.col.key == col.key for d in plan.dims):
                plan.dims.append(Dim(col))
            index = next(i for i, d in enumerate(plan.dims) if d.col.key == col.key)
            newest = not re.match(r"oldest|earliest", recency.group(0))
            plan.order.append((f"d{index}", newest))
            ctx.known.update({stem(w) for w in recency.group(0).split()})
            return
    superlative = ""  # the word before the phrase ordered by, where one says it
    popular = re.search(r"\b(most|least)\s+(?:common|frequent(?:ly)?|popular|often)\b", low)
    if not phrase and popular:
        counts = [i for i, x in enumerate(plan.measures) if x.func in ("COUNT", "COUNT_DISTINCT")]
        if not counts:
            plan.measures.append(Measure("COUNT", label="count"))
            counts = [len(plan.measures) - 1]
        plan.order.append((f"m{counts[0]}", popular.group(1) == "most"))
        return
    if not phrase and desc is not None:
        m = re.search(
            r"\b(most|least|highest|lowest|largest|smallest)\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|in|for|who|that|from|by|between)\b|$)",
            low,
        )
        phrase = m.group(2) if m else ""
        superlative = m.group(1) if m else ""
        said = phrase.split()
        where = [stem(w) for w in said[1:] if w not in STOP_WORDS]
        if said and said[0] in PREPOSITIONS and where and ctx.vocab.tables_named(where):
            # "spent the most on cars": "most" stands for a quantity only the verb names;
            # the table after the preposition is where it went, not what is compared
            # (counting cars is another question). "the most in total" names no table:
            # its words may still name the quantity (``total_spent``)
            raise LinkError(f"nothing says what '{superlative}' compares", phrase=superlative)
    direction = desc
    if re.search(
        r"\b(lowest|smallest|least|fewest|ascending|earliest|oldest)\b[^.?]*\bfirst\b|\bascending\b|\bfrom lowest\b|\blowest to highest\b",
        low,
    ):
        direction = False
    elif direction is None and re.search(
        r"\b(descending|highest first|most to least|from highest|longest .* first|starting from the top)\b",
        low,
    ):
        direction = True
    target = ""
    if phrase:
        phrase = re.sub(r"^(?:the\s+)?(?:lowest|highest|most|least)\s+", "", phrase)
        extreme = VALUE_SUPERLATIVES.get(superlative)
        target = order_target(ctx, plan, phrase, extreme=extreme)
    time_dims = [i for i, d in enumerate(plan.dims) if d.grain]
    if (
        not target
        and time_dims
        and desc is None
        and re.search(r"\b(order|sort)\w*\b|\bascending\b|\bdescending\b|\bchronolog", low)
    ):
        target = f"d{time_dims[0]}"  # "in ascending order" of a time series: by time
    if not target and plan.measures and (desc is not None or direction is not None):
        target = "m0"
    if not target and plan.dims and re.search(r"\b(order|sort)\w*\b", low):
        time_dims = [i for i, d in enumerate(plan.dims) if d.grain]
        target = f"d{time_dims[0]}" if time_dims else ""
        if direction is None:
            direction = False
    if target:
        plan.order.append((target, bool(direction if direction is not None else True)))
        # "by number of treatments and average amount": a second key for ties
        more = re.match(
            r"\s+and\s+([a-z0-9 ]+?)(?=[,.?;]|\s+(?:in|for|who|that|from)\b|$)",
            low[m.end() :] if m else "",
        )
        if more and phrase:
            second = read_measure(ctx, more.group(1).strip())
            if second is not None:
                for i, existing in enumerate(plan.measures):
                    if same_measure(existing, second) or refines(existing, second):
                        plan.order.append((f"m{i}", plan.order[0][1]))
                        break


# Superlatives of a value ("the highest closing price"), not of an amount ("the most
# shares"): whether the greatest value wins. Ranking rows by a value their many related
# rows hold compares each row's greatest (least) value; adding the values up answers
# "the most".
VALUE_SUPERLATIVES = {"highest": True, "largest": True, "lowest": False, "smallest": False}


def order_target(ctx: LinkContext, plan: Plan, phrase: str, *, extreme: bool | None = None) -> str:
    """The output slot ``phrase`` orders by, added to the plan when it is not there yet.
    ``extreme``: the phrase followed a superlative of a value (True for the highest),
    which a listed row with many related rows has its greatest (least) of."""
    words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
    if re.search(r"[/*]|\s-\s", phrase):
        for i, existing in enumerate(plan.measures):
            if existing.func == "EXPR" and " ".join(existing.label.split()) == " ".join(
                phrase.split()
            ):
                return f"m{i}"
        made = read_arith(ctx, phrase)
        if made is None:
            return ""
        plan.measures.append(made)
        return f"m{len(plan.measures) - 1}"
    measure = read_measure(ctx, phrase)
    if measure is None and ctx.vocab.tables_named(words):
        measure = read_measure(ctx, "number of " + phrase)
    if measure is None and not plan.measures:
        col = find_column(ctx, words, numeric=True)
        if col is not None and many_of(ctx, col.table, plan):
            # "top 5 reps by won amount": each rep's deals summed; "the 3 tickers with
            # the highest closing price": each ticker's highest
            func = "SUM" if extreme is None else ("MAX" if extreme else "MIN")
            plan.measures.append(Measure(func, col=col, label=phrase))
            return f"m{len(plan.measures) - 1}"
        if col is not None:
            plan.dims.append(Dim(col))
            return f"d{len(plan.dims) - 1}"
        measure = read_measure(ctx, "number of " + phrase)
    if measure is not None:
        for i, m in enumerate(plan.measures):
            if same_measure(m, measure):
                return f"m{i}"
        if measure.func == "COUNT" and measure.table is not None:
            for i, m in enumerate(plan.measures):
                if (
                    m.func in ("COUNT", "COUNT_DISTINCT")
                    and m.table is not None
                    and m.table.qualified == measure.table.qualified
                ):
                    return f"m{i}"
        plan.measures.append(measure)
        return f"m{len(plan.measures) - 1}"
    for i, d in enumerate(plan.dims):
        if ctx.vocab.column_score(words, d.col) >= 0.5:
            return f"d{i}"
    col = find_column(ctx, words, numeric=True)
    if col is not None and plan.measures:
        plan.measures.append(Measure("SUM", col=col, label=phrase))
        return f"m{len(plan.measures) - 1}"
    if col is not None:
        plan.dims.append(Dim(col))
        return f"d{len(plan.dims) - 1}"
    return ""


def many_of(ctx: LinkContext, table: TableInfo, plan: Plan) -> bool:
    """Whether ``table`` holds many rows per row of the table the listing shows (a
    reference from it to that table), so its numbers must be summed per listed row."""
    shown = {d.col.table.qualified for d in plan.dims}
    if len(shown) != 1 or table.qualified in shown:
        return False
    (entity,) = shown
    path = ctx.graph.path(table.qualified, entity)
    if not path:
        return False
    here = table.qualified
    for edge in path:
        if edge.child != here:
            return False
        here = edge.parent
    return True


# The participles this reader always took as a passive's before "by", "by each" too.
_AGENT_PARTICIPLES = frozenset(
    ["made", "sent", "sold", "bought", "paid", "done", "given", "taken", "written", "placed",
     "owned", "held", "run", "led", "kept"]
)  # fmt: skip
