"""Clauses that keep rows: comparisons with numbers ("older than 30", "between 3 and 5",
"above the average"), stored values ("from France", "named Kyle"), the absence or
presence of related rows, and the tables a phrase names.
"""

from __future__ import annotations

from services.sql.catalog import TableInfo, is_number
from services.sql.linker._lookup import refers_to_rows
from services.sql.linker._mentions import (
    Mention,
)
from services.sql.linker._negated import PREPOSITIONS as NEGATED_PREPOSITIONS
from services.sql.linker._negated import is_participle, one_per_row
from services.sql.linker._plan import (
    is_key,
)
from services.sql.linker.clauses._cues import (
    CLAUSE_START,
    COMPARE,
    DIMENSION_UNITS,
    DIMENSIONS,
    EXCLUSIONS,
    HAVING,
    NEGATIONS,
    OR_BOUND,
    PREPOSITIONS,
    SPLIT_COMPARATIVES,
    TRAILING_COMPARE,
    unit_after_number,
)
from services.sql.linker.clauses._reading import (
    Condition,
    Counted,
    Decline,
    Read,
    Reading,
    is_year,
    table_first,
)
from services.sql.words import canonical_unit, name_words, same_measure


def _comparison(reading: Reading, i: int) -> tuple[str, int] | None:
    """A comparison phrase at ``i``: its operator and where it ends."""
    phrase = reading.match(i, tuple(COMPARE))
    if phrase:
        return COMPARE[phrase], i + len(phrase.split())
    if reading.low(i) in ("is", "are", "was", "were"):
        inner = _comparison(reading, i + 1)
        if inner is not None:
            return inner
    return None


def _literal(number: float) -> str:
    return str(int(number)) if number == int(number) else repr(number)


def compare_clause(reading: Reading, read: Read, i: int) -> int | None:
    # "<column> [is] above 30", "above 30", "more than 3 <table|column>", "older than 30"
    start = i
    columns = _numeric_columns(reading, i)
    j = columns[0].end if columns else i
    if columns and reading.low(j) in ("is", "are", "was", "were"):
        j += 1  # "whose weight is heavier than 10"
    dimension = ""
    op = ""
    if reading.low(j) in DIMENSIONS and reading.low(j + 1) == "than":
        dimension, op = DIMENSIONS[reading.low(j)]
        if columns:
            dimension = ""  # the column said it: "weight is heavier than 10"
        j += 2
    elif not columns and (split := _split_comparison(reading, j)) is not None:
        # "a greater weight than 10", "above age 20": the column inside the comparison
        op, columns, j = split
    else:
        found = _comparison(reading, j)
        if found is None:
            if not columns:
                bounded = _bound_after_number(reading, read, i)
                if bounded is not None:
                    return bounded
            between = _between(reading, read, i, columns)
            return between
        op, j = found
    j = reading.skip(j, frozenset({"the", "a", "an"}))
    if reading.low(j) in ("average", "mean", "avg"):
        return _than_average(reading, read, start, columns, dimension=dimension, op=op, j=j)
    number = reading.number(j)
    if number is None:
        return None
    end = j + 1
    if dimension and unit_after_number(reading.tokens, end):
        # "longer than 1000 miles": the unit is the number's, of the adjective's measure
        # (left to the unit check); of another measure ("longer than 3 hours": a
        # duration) the adjective names no column that holds it
        if not same_measure(canonical_unit(reading.low(end)), DIMENSION_UNITS[dimension]):
            raise Decline(f"{reading.low(end)!r} measures no {dimension}")
        end += 1
    elif columns and unit_after_number(reading.tokens, end):
        # "an altitude higher than 5000 feet": the unit is the number's, as in "an
        # altitude above 5000 feet" (the other reader's); whether the column counts it is
        # the unit check's (converted where declared, else raw or refused by its extent)
        end += 1
    after_tables = reading.longest(end, ("table",))
    after_columns = reading.longest(end, ("column",))
    if (
        after_tables
        and not columns
        and not dimension
        and (not after_columns or after_tables[0].size >= after_columns[0].size)
        and not _aged_rows(reading, start, number)
    ):
        table = after_tables[0].table
        assert table is not None
        read.counted.append(Counted(table, op, int(number)))
        read.mention_table(table)
        reading.use(start, after_tables[0].end)
        return after_tables[0].end
    mentions = columns
    if not mentions and not dimension and after_columns:
        mentions = after_columns
        end = after_columns[0].end
    if not mentions and not dimension and _of_rows(reading, start):
        # "singers over 30", "people under 25": a bare number over or under beings is
        # their age (placed only where a column says it, else the reading declines)
        dimension = "age"
    if not mentions and not dimension:
        return None
    read.conditions.append(
        Condition(start, end, mentions, op, _literal(number), dimension=dimension)
    )
    reading.use(start, end)
    return end


def _aged_rows(reading: Reading, i: int, number: float) -> bool:
    """Whether "over"/"under" at ``i`` bounds the rows said just before it by their
    stored age: "singers under 30 sang at concerts" is the singers' ``age`` below 30,
    not 30 concert rows counted (a table read after the number, "sang" for the singers,
    took the bound as a count: a confident wrong). Only where that table stores one age
    column whose least and greatest values hold the number; a count has no column, and
    a number out of every age's range is left to the count."""
    if not _of_rows(reading, i):
        return False
    before = reading.longest(i - 1, ("table",))
    table = before[0].table if before else None
    if table is None:
        return False
    ages = [
        c
        for c in table.columns
        if is_number(c.data_type) and "age" in name_words(c.name) and c.extent is not None
    ]
    return (
        len(ages) == 1
        and ages[0].extent is not None
        and (ages[0].extent[0] <= number <= ages[0].extent[1])
    )


def _of_rows(reading: Reading, i: int) -> bool:
    """Whether "over"/"under" at ``i`` follows the rows it bounds ("singers over",
    "the ones under")."""
    return (
        i > 0
        and reading.low(i) in ("over", "under")
        and (bool(reading.longest(i - 1, ("table",))) or reading.low(i - 1) in ("ones", "those"))
    )


def _split_comparison(reading: Reading, i: int) -> tuple[str, list[Mention], int] | None:
    """A comparison around a numeric column, then a number: "a greater weight than 10"
    (comparative, column, "than") or "above age 20" (comparison, column); its operator,
    the column's mentions and where the number starts."""
    j = reading.skip(i, frozenset({"a", "an", "the"}))
    op = SPLIT_COMPARATIVES.get(reading.low(j), "")
    if op:
        columns = _numeric_columns(reading, j + 1)
        if columns and reading.low(columns[0].end) == "than":
            return op, columns, columns[0].end + 1
        return None
    found = _comparison(reading, i)
    if found is None:
        return None
    op, j = found
    columns = _numeric_columns(reading, j)
    if columns and reading.number(columns[0].end) is not None:
        return op, columns, columns[0].end
    return None


def _numeric_columns(reading: Reading, i: int) -> list[Mention]:
    """The mentions at ``i`` of columns holding quantities (no key, no reference)."""
    return [
        m
        for m in reading.longest(i, ("column",))
        if m.col is not None
        and is_number(m.col.column.data_type)
        and not is_key(m.col)
        and not refers_to_rows(reading.ctx, m.col)
    ]


def _bound_after_number(reading: Reading, read: Read, i: int) -> int | None:
    """A bound said after its number, then what it bounds: "2 or more paragraphs" (a
    count of related rows at least 2), "3 or fewer cylinders" (a column), "1 to 2
    paragraphs" (a count within both numbers, inclusive as "between" is; from 1, since
    the rows counted are those the join keeps)."""
    number = reading.number(i)
    if number is None:
        return None
    bound = reading.match(i + 1, tuple(TRAILING_COMPARE))
    if bound:
        return _counted_or_compared(
            reading, read, i, i + 1 + len(bound.split()), [(TRAILING_COMPARE[bound], number)]
        )
    high = reading.number(i + 2)
    if reading.low(i + 1) == "to" and high is not None and high >= number >= 1:
        return _counted_or_compared(reading, read, i, i + 3, [(">=", number), ("<=", high)])
    return None


def _counted_or_compared(
    reading: Reading, read: Read, start: int, j: int, bounds: list[tuple[str, float]]
) -> int | None:
    """The bounds placed on what follows ``j``: a table's related rows counted, or a
    numeric column; None (nothing read) when neither follows."""
    tables = reading.longest(j, ("table",))
    columns = _numeric_columns(reading, j)
    if tables and (not columns or tables[0].size >= columns[0].size):
        table = tables[0].table
        assert table is not None
        read.counted.extend(Counted(table, op, int(n)) for op, n in bounds)
        read.mention_table(table)
        end = tables[0].end
    elif columns:
        end = columns[0].end
        read.conditions.extend(Condition(start, end, columns, op, _literal(n)) for op, n in bounds)
    else:
        return None
    reading.use(start, end)
    return end


def _between(reading: Reading, read: Read, i: int, columns: list[Mention]) -> int | None:
    j = columns[0].end if columns else i
    if reading.low(j) in ("is", "are", "was", "were"):
        j += 1
    if reading.low(j) != "between":
        return None
    low, high = reading.number(j + 1), reading.number(j + 3)
    if low is None or high is None or reading.low(j + 2) != "and":
        return None
    if not columns:
        # "documents that have between one and two paragraphs": a count of related rows
        # (from 1: the rows counted are those the join keeps, none with no related row)
        if any(n != int(n) for n in (low, high)) or not 1 <= low <= high:
            return None
        return _counted_or_compared(reading, read, i, j + 4, [(">=", low), ("<=", high)])
    read.conditions.append(Condition(i, j + 4, columns, ">=", _literal(low)))
    read.conditions.append(Condition(i, j + 4, columns, "<=", _literal(high)))
    reading.use(i, j + 4)
    return j + 4


def _than_average(
    reading: Reading,
    read: Read,
    start: int,
    columns: list[Mention],
    *,
    dimension: str,
    op: str,
    j: int,
) -> int:
    end = j + 1
    after = reading.longest(end, ("column",))
    if after and not columns and not dimension:
        columns = after
        end = after[0].end
    elif after:
        end = after[0].end
    if not columns and not dimension:
        raise Decline("an average of something the question does not name")
    read.conditions.append(Condition(start, end, columns, op, "AVERAGE", dimension=dimension))
    reading.use(start, end)
    return end


# Words that open a condition on the rows a noun phrase names ("… with 3 rooms", "… that
# cost more", "… whose price").
_MODIFIERS = frozenset({"with", "that", "who", "whose", "which", "having", "where"})
_SPAN_ENDS = frozenset({"to", "until", "till", "through", "thru", "and", "-", "onwards", "on"})


def value_clause(reading: Reading, read: Read, i: int) -> int | None:
    start = i
    if reading.low(i) in PREPOSITIONS:
        i = reading.skip(i + 1, frozenset({"the", "a", "an", "year", "years"}) if
                         reading.low(i) == "in" else frozenset({"the", "a", "an"}))  # fmt: skip
    columns = reading.longest(i, ("column",))
    j = columns[0].end if columns else i
    named = reading.low(j) in ("named", "called", "titled")
    if named or reading.low(j) in ("is", "are", "was", "were", "of", "=", "as", "either"):
        j += 1
        if reading.low(j) == "either":
            j += 1
    # "made in 2021", and "cars from 2021": a year said after "from" as the one a row is
    # of, unless it opens a span ("from 2019 to 2021", read by the date readers)
    year = (
        not columns
        and (
            reading.low(start) in ("in", "during")
            or (reading.low(start) == "from" and reading.low(j + 1) not in _SPAN_ENDS)
        )
        and is_year(reading, j)
    )
    # "each state other than TX", "customers except those in CA": one value left out
    excluded = reading.match(j, EXCLUSIONS)
    if excluded:
        j += len(excluded.split())
        j = reading.skip(j, frozenset({"those", "ones", "the"}))
        if reading.low(j) in PREPOSITIONS:
            j = reading.skip(j + 1, frozenset({"the", "a", "an"}))
    group: list[Condition] = []
    while True:
        values = reading.longest(j, ("value",))
        number = reading.number(j) if (columns or year) else None
        if values:
            group.append(Condition(start, values[0].end, columns, "=", "", col=None))
            group[-1].mentions = columns + values
            end = values[0].end
        elif number is not None and reading.tokens[j].number is not None:
            group.append(Condition(start, j + 1, columns, "=", _literal(number)))
            if year:
                group[-1].dimension = "year"
            end = j + 1
        else:
            break
        if named:
            group[-1].dimension = "name"
        j = end
        # "0 minutes or less": the unit between the number and its bound is the number's
        unit = 1 if group[-1].value and unit_after_number(reading.tokens, j) else 0
        bound = reading.match(j + unit, tuple(OR_BOUND))
        if bound and len(group) == 1 and group[0].value:
            group[0].op = OR_BOUND[bound]
            j += unit + len(bound.split())
            group[0].end = j
            break
        if reading.low(j) == "or" or (reading.low(j) == "," and reading.low(j + 1) != "and"):
            nxt = j + 1
            if reading.longest(nxt, ("value",)) or (
                (columns or year) and reading.tokens[nxt].number is not None
                if nxt < reading.size
                else False
            ):
                j = nxt
                continue
        break
    if len(group) > 1 and reading.low(j) in _MODIFIERS:
        # "houses or apartments with more than 1 room": the condition may bound the last
        # value alone or every one; which is not said, so it is not guessed
        raise Decline("a condition after values joined by 'or'")
    if excluded:
        if not group:
            return None  # "excluding the current month": a date window's, not a value's
        if len(group) != 1:
            # "other than TX or CA": each left out, which one condition per value does not
            # say (their ORed inequalities would keep every row)
            raise Decline(f"{excluded!r} before more than one value")
        group[0].op = "<>"
        reading.ctx.known.update(excluded.split())  # read as the inequality: explained
    if not group:
        # "with 8 cylinders": a number, then the column it counts; "have 8 cylinders" the
        # same, where the column holds quantities and no table is named instead ("have 2
        # pets" counts related rows)
        having = start == i and reading.low(i) in HAVING
        if having:
            i += 1
        number = reading.number(i) if i < reading.size and reading.tokens[i].number else None
        after = reading.longest(i + 1, ("column",)) if number is not None else []
        if having and after:
            tables = reading.longest(i + 1, ("table",))
            numeric = _numeric_columns(reading, i + 1)
            if not numeric or (tables and tables[0].size >= numeric[0].size):
                return None
            after = numeric
        if number is None or not after or start == i:
            return None
        if not having:
            # "with 4 engines" beside a text ``engine``: the number is of the column that
            # holds numbers, where the words name one of each
            after = [
                m for m in after if m.col is None or is_number(m.col.column.data_type)
            ] or after
        group.append(Condition(start, after[0].end, after, "=", _literal(number)))
    reading.use(start, group[-1].end)
    if len(group) == 1:
        read.conditions.append(group[0])
    else:
        read.ors.append(group)
    return group[-1].end


def negated_value_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "not operated by American Airlines Inc.": one stored value after "not", a
    participle and its preposition, is the value the rows do not have (``<>``) where each
    row has one (``_negated``); read as an absence instead, the phrase ran on and took the
    next clause's table ("… did each origin airport have?") for the absent rows. A list
    after it ("not from France or Spain") or a value a row may hold many of is declined,
    for the list-oriented reader to leave the "not" unapplied and the verifier to refuse."""
    if reading.low(i) != "not":
        return None
    j = i + 1
    if is_participle(reading.low(j)) and reading.low(j + 1) in NEGATED_PREPOSITIONS:
        j += 1
    if reading.low(j) not in NEGATED_PREPOSITIONS:
        return None
    j = reading.skip(j + 1, frozenset({"the"}))
    values = reading.longest(j, ("value",))
    if not values:
        return None
    end = values[0].end
    if reading.low(end) in ("or", "and", "nor", ","):
        raise Decline("a negated list of values")
    kept = [m for m in values if m.col is not None and one_per_row(reading.ctx, m.col)]
    if not kept:
        raise Decline("a negated value a row may hold many of")
    beside = {
        m.col.key
        for m in reading.chart.mentions
        if m.kind == "value" and m.col is not None and not j <= m.start < end
    }
    if any(m.col is not None and m.col.key in beside for m in kept):
        # "carriers that flew from LGA but not from JFK": another value of the column is
        # said too, so the "not" is said of the carriers (a set difference), not of
        # each flight, where one inequality beside the equality would change nothing
        raise Decline("a negated value beside another of its column")
    condition = Condition(i, end, [], "<>", "")
    condition.mentions = kept
    read.conditions.append(condition)
    reading.use(i, end)
    reading.ctx.known.update(t.low for t in reading.tokens[i:j])  # read as the inequality
    return end


def absent_clause(reading: Reading, read: Read, i: int) -> int | None:
    # "that do not have any X", "without X", "with no X", "who are not X", "that do not
    # have a cat pet", "who did not visit any museum opened after 2010"
    j = i
    if reading.low(j) in ("who", "that", "which"):
        j += 1
    negated = False
    while j < reading.size and reading.low(j) in (
        "do", "does", "did", "not", "have", "has", "had", "are", "is", "were", "was",
        "never", "no", "without", "any", "a", "an", "with", "been", "in", "own", "owns",
    ):  # fmt: skip
        negated = negated or reading.low(j) in NEGATIONS
        j += 1
    if not negated or j == i:
        return None
    # the negated phrase: values, comparisons and one table, up to the next clause
    inner = Read(read.kind)
    end = j
    table: TableInfo | None = None
    said_at = -1  # where the absent table's mention ends
    while end < reading.size and reading.low(end) not in CLAUSE_START:
        tables = reading.longest(end, ("table",))
        columns = reading.longest(end, ("column",))
        if tables and (not columns or table_first(tables, columns)) and table is None:
            table = tables[0].table
            reading.use(end, tables[0].end)
            end = said_at = tables[0].end
            continue
        after = compare_clause(reading, inner, end) or value_clause(reading, inner, end)
        if after is None:
            verb = _verb_table(reading, end)
            if verb is not None and table is None:
                table = verb
                reading.use(end, end + 1)
            end += 1
            continue
        end = after
    if inner.ors or inner.counted or inner.ranks:
        raise Decline("a negated phrase the reader cannot compose")
    if end == said_at and reading.low(end) in ("that", "which", "who"):
        # "owners that do not have an animal that weighs more than 10": the relative
        # clause is said of the absent rows; read as a clause of its own it required a
        # related row the absence then denied (an answer empty by construction)
        raise Decline("a relative clause said of the absent rows")
    if table is None:
        tables_of_values = {
            m.col.table.qualified: m.col.table
            for c in inner.conditions
            for m in c.mentions
            if m.col is not None
        }
        if len(tables_of_values) != 1:
            return None
        table = next(iter(tables_of_values.values()))
    read.anti.append((table, inner.conditions))
    read.mention_table(table)
    reading.use(i, j)
    return end


def _verb_table(reading: Reading, i: int) -> TableInfo | None:
    """A verb naming a table by its first letters ("hire" for ``hiring``)."""
    verb = reading.tokens[i].stem if i < reading.size else ""
    if len(verb) < 4:
        return None
    for m in reading.chart.mentions:
        if (
            m.kind == "table"
            and m.size == 1
            and m.table is not None
            and (verb[:4] == reading.tokens[m.start].stem[:4])
        ):
            return m.table
    for table in reading.ctx.catalog.tables:
        if table.name.lower().startswith(verb[:4]):
            return table
    return None


def present_clause(reading: Reading, read: Read, i: int) -> int | None:
    # "who have a pet", "that have likes"
    j = i
    if reading.low(j) in ("who", "that", "which"):
        j += 1
    if reading.low(j) not in ("have", "has", "had", "own", "owns"):
        return None
    j = reading.skip(j + 1, frozenset({"a", "an", "any", "some", "the"}))
    tables = reading.longest(j, ("table",))
    if not tables:
        return None
    table = tables[0].table
    assert table is not None
    read.semi.append(table)
    read.mention_table(table)
    reading.use(i, tables[0].end)
    return tables[0].end


def table_clause(reading: Reading, read: Read, i: int) -> int | None:
    tables = reading.longest(i, ("table",))
    columns = reading.longest(i, ("column",))
    if not tables or (columns and columns[0].size > tables[0].size):
        return None
    table = tables[0].table
    assert table is not None
    if read.entity is None:
        read.entity = table
    read.mention_table(table)
    reading.use(i, tables[0].end)
    return tables[0].end
