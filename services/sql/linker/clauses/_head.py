"""The head (what kind of answer: a count, a list, which rows, when) and the items the
answer shows, up to the first word that starts a clause.
"""

from __future__ import annotations

from services.sql.catalog import is_number
from services.sql.linker._mentions import Mention
from services.sql.linker.clauses._cues import (
    AGGREGATES,
    BOUNDARY,
    COMPARE,
    COUNT_HEADS,
    DIMENSIONS,
    LIST_HEADS,
    RANKED,
    ROWS_END,
    WHEN_AUXILIARIES,
)
from services.sql.linker.clauses._reading import (
    Condition,
    Decline,
    Item,
    Read,
    Reading,
    table_first,
)
from services.sql.words import measure_name, name_words


def read_head(reading: Reading, start: int = 0) -> tuple[str, int]:
    """The kind of answer ("count", "list", "which", "when") and where the items start;
    a conversation's "and …", "so …" before it changes nothing."""
    at = start
    if reading.low(at) in ("and", "so", "but", "now") and reading.size > at + 1:
        at += 1
    count = reading.match(at, COUNT_HEADS)
    if count:
        reading.use(0, at + len(count.split()))
        return "count", at + len(count.split())
    head = reading.match(at, LIST_HEADS)
    if head:
        reading.use(0, at + len(head.split()))
        return "list", at + len(head.split())
    if reading.low(at) == "which" and reading.low(at + 1) == "of":
        # "Which of the countries has …": which countries
        start = reading.skip(at + 2, frozenset({"the", "these", "those", "all"}))
        reading.use(0, start)
        return "which", start
    if reading.low(at) in ("which", "what"):
        reading.use(0, at + 1)
        return "which", at + 1
    if reading.low(at) == "when" and reading.low(at + 1) in WHEN_AUXILIARIES:
        # "When did the customers join?": the dates of the event the question's verb
        # names (``when_event``); the verifier refuses a reading that returns no date
        reading.use(0, at + 2)
        return "when", at + 2
    raise Decline("the question's form is not one the reader knows")


def compared_rows(reading: Reading, k: int) -> bool:
    """ "List the teachers older than 30.": the rows, then a comparative that says a
    condition of theirs (a relative clause without its "who are"), as "with" or "who"
    after the rows does; the rows are listed by their label. So is "over"/"under" and a
    number ("List the singers under 35."): the compare clause reads it as the rows'
    age, placed only where a column stores one (``_conditions._of_rows``)."""
    if reading.low(k) in ("over", "under") and reading.number(k + 1) is not None:
        return True
    return reading.low(k) in DIMENSIONS and reading.low(k + 1) == "than"


def says_dimension(reading: Reading, j: int, word: str) -> bool:
    """Whether the column said at ``j`` is the dimension a superlative ranks by ("the
    heaviest car weight": ``weight``): its name has the word as a whole part. The
    superlative is then its extreme value, not a ranking of rows."""
    return any(
        m.col is not None and word in name_words(m.col.column.name)
        for m in reading.longest(j, ("column",))
    )


def numbered(reading: Reading, read: Read, columns: list[Mention], pending: list[str]) -> bool:
    """ "Which teachers teach grade 1?": after the rows asked for, a column's word then a
    number ends the question ("grade 1", "gate 5"): the column holding that number, a
    condition, not a second thing shown."""
    end = columns[0].end
    return (
        bool(read.items)
        and not pending
        and end == reading.size - 1
        and reading.tokens[end].number is not None
        and all(m.col is not None and is_number(m.col.column.data_type) for m in columns)
    )


def stored_count(reading: Reading, i: int) -> list[Mention] | None:
    """ "number of staff" at ``i`` said of a number column whose name says it stores that
    count (``museum.num_of_staff``): the column's mentions, where "number of" would
    otherwise count distinct values of the column (and leave an aggregate before it,
    "the average number of staff", with no column). None when the words after it name
    anything else: a table's rows, or a column that stores no count."""
    said = reading.match(i, ("number of", "count of"))
    if not said:
        return None
    j = reading.skip(i + len(said.split()), frozenset({"the"}))
    columns = reading.longest(j, ("column",))
    if not columns or reading.longest(j, ("table",)):
        return None
    if not all(
        m.col is not None and is_number(m.col.column.data_type) and measure_name(m.col.column.name)
        for m in columns
    ):
        return None
    return columns


def read_items(reading: Reading, read: Read, at: int) -> int:
    """The items up to the first clause word; returns where the clauses start."""
    pending: list[str] = []  # aggregates waiting for their column ("average and maximum")
    i = at
    while i < reading.size:
        low = reading.low(i)
        if low in (",", "and", "as", "well", "along", "together", "their", "its", "the", "all"):
            if reading.match(i, ("as well as", "along with", "together with")):
                n = len(reading.match(i, ("as well as", "along with", "together with")).split())
                reading.use(i, i + n)
                i += n
                continue
            if low in ("and", "the", "all", "their", "its"):
                reading.use(i, i + 1)
                i += 1
                continue
            break
        if low in ("distinct", "different", "unique"):
            read.distinct = True
            reading.use(i, i + 1)
            i += 1
            continue
        if low in AGGREGATES and not (low in ("highest", "lowest", "largest", "smallest")
                                       and read.kind == "which"):  # fmt: skip
            pending.append(AGGREGATES[low])
            reading.use(i, i + 1)
            i = reading.skip(i + 1, frozenset({"of", "the"}))
            continue
        if low in RANKED and says_dimension(reading, i + 1, RANKED[low][0]):
            # "the heaviest car weight": the weight's maximum, as "the maximum weight" is
            pending.append("MAX" if RANKED[low][1] else "MIN")
            reading.use(i, i + 1)
            i += 1
            continue
        stored = stored_count(reading, i)
        if stored is not None:
            # "the average number of staff": the count each row stores (``num_of_staff``)
            for func in pending or [""]:
                read.items.append(Item(func, i, stored[-1].end, stored))
            pending = []
            reading.use(i, stored[-1].end)
            i = stored[-1].end
            continue
        counted = reading.match(i, ("number of", "count of", "numbers of", "counts of"))
        if counted:
            n = len(counted.split())
            reading.use(i, i + n)
            i = reading.skip(i + n, frozenset({"the", "distinct", "different", "unique"}))
            tables = reading.longest(i, ("table",))
            if tables:
                read.items.append(Item("COUNT", i, tables[0].end, table=tables[0].table))
                reading.use(i, tables[0].end)
                i = tables[0].end
                continue
            columns = reading.longest(i, ("column",))
            if columns:
                read.items.append(Item("COUNT_DISTINCT", i, columns[0].end, columns))
                reading.use(i, columns[0].end)
                i = columns[0].end
                continue
            raise Decline("a count of something the schema does not name")
        if low in BOUNDARY:
            break
        columns = reading.longest(i, ("column",))
        tables = reading.longest(i, ("table",))
        kind = _counted_kind(reading, read, i) if not (tables or columns or pending) else None
        if kind is not None:
            i = kind
            continue
        predicate = bool(tables and columns) and _predicate(reading, read, tables, columns)
        if tables and not pending and (not columns or table_first(tables, columns) or predicate):
            table = tables[0].table
            assert table is not None
            if pending:
                raise Decline("an aggregate of a table")
            after = [
                m for m in reading.longest(tables[0].end, ("column",))
                if m.col is not None and m.col.table is table
            ]  # fmt: skip
            if read.kind == "count" and not read.items and after:
                # "how many store locations": the distinct values of the table's column
                read.items.append(Item("COUNT_DISTINCT", tables[0].end, after[0].end, after))
                read.mention_table(table)
                reading.use(i, after[0].end)
                i = after[0].end
                continue
            if read.kind == "count" and not read.items:
                read.items.append(Item("COUNT", i, tables[0].end, table=table))
            elif not read.items and (
                read.kind == "which"
                or (
                    read.kind == "list"
                    and not read.when
                    and (
                        reading.low(tables[0].end) in ROWS_END
                        or compared_rows(reading, tables[0].end)
                    )
                )
            ):
                # "which airlines …", "give the airline with …": the rows, by their label
                read.items.append(Item("", i, tables[0].end, table=table))
            else:
                # "singer names": the table says whose column follows
                read.mention_table(table)
                if read.entity is None and read.kind != "list":
                    read.entity = table
            reading.use(i, tables[0].end)
            i = tables[0].end
            if read.entity is None and read.kind in ("count", "which"):
                read.entity = table
            if predicate:
                break  # the column's word opens the comparison clause
            continue
        if columns and numbered(reading, read, columns, pending):
            break  # "teach grade 1": the value clause reads the column and its number
        if columns:
            funcs = pending or [""]
            for func in funcs:
                read.items.append(Item(func, i, columns[0].end, columns))
            pending = []
            reading.use(i, columns[0].end)
            i = columns[0].end
            continue
        if low in ("name", "names", "id", "ids", "title", "titles"):
            read.items.append(Item(pending[0] if pending else "", i, i + 1, label=True))
            pending = []
            reading.use(i, i + 1)
            i += 1
            continue
        break
    if pending:
        raise Decline("an aggregate names no column")
    return i


def _predicate(reading: Reading, read: Read, tables: list[Mention], columns: list[Mention]) -> bool:
    """ "Which cars cost more than 50000?": the table's noun, then its column's word said
    as the verb of a comparison. The two words spell the column ("car cost") but the
    comparison right after it makes the column the predicate: the rows asked for are the
    table's, and the comparison clause reads the column with its bound. Only as the
    first item of "which …", where the rows are what is asked."""
    table, column = tables[0], columns[0]
    return (
        read.kind == "which"
        and not read.items
        and column.start == table.start
        and table.end < column.end
        and column.col is not None
        and column.col.table is table.table
        and bool(reading.match(column.end, tuple(COMPARE)))
    )


def _counted_kind(reading: Reading, read: Read, i: int) -> int | None:
    """ "How many dogs are owned by students": the counted noun is a stored value (a
    pet's type), so the rows counted are its table's where the column holds it; where
    that noun ends, or None when it is no such value (or values of several tables)."""
    values = [m for m in reading.longest(i, ("value",)) if m.col is not None]
    if read.kind != "count" or read.items or not values:
        return None
    if len({m.col.table.qualified for m in values if m.col is not None}) != 1:
        return None
    table = values[0].col.table  # type: ignore[union-attr]
    end = values[0].end
    nouns = reading.longest(end, ("table",))
    if nouns and nouns[0].table is not None and nouns[0].table is not table:
        # "How many JetBlue Airways flights": the value says which of the rows the noun
        # after it names; those are counted (was the distinct airlines, one)
        counted = nouns[0].table
        read.items.append(Item("COUNT", end, nouns[0].end, table=counted))
        read.conditions.append(Condition(i, end, values, "=", ""))
        read.mention_table(counted)
        read.entity = read.entity or counted
        reading.use(i, nouns[0].end)
        return nouns[0].end
    read.items.append(Item("COUNT", i, end, table=table))
    read.conditions.append(Condition(i, end, values, "=", ""))
    read.mention_table(table)
    read.entity = read.entity or table
    reading.use(i, end)
    return end


def counted_head(reading: Reading, read: Read, at: int) -> int:
    """ "Which 3 countries have the most makers?": a whole number right after "which" or
    "what" is how many of the ranked rows to give (the limit); read only where a ranking
    follows (checked when the plan is made), since "which 2 students" alone orders
    nothing."""
    # "What are the three airports with the highest altitude?", "List the 5 …": the same
    # number after a listing head and its article
    at_number = at + 1 if read.kind == "list" and reading.low(at) == "the" else at
    # "the first three airline names", "the top 5 …": the same limit, said with the word
    # that a limit cuts from the front of the order
    opens = at_number
    if reading.low(at_number) in ("first", "top") and reading.number(at_number + 1) is not None:
        at_number += 1
    number = reading.number(at_number)
    if read.kind not in ("which", "list") or number is None or number != int(number) or number < 1:
        return at
    # "list the 2 …" says a limit only before the rows it cuts, or before the superlative
    # that ranks them ("the 2 youngest teachers": an adjective of the rows, then the rows)
    rows_at = at_number + 1
    if reading.low(rows_at) in RANKED:
        rows_at += 1
    if read.kind == "list" and reading.longest(rows_at, ("table",)) == []:
        return at
    if reading.number(at_number + 1) is not None or reading.low(at_number + 1) in (
        "",
        "or",
        "and",
        "of",
    ):
        return at if opens != at_number else at_number
    at = at_number
    read.limit = int(number)
    read.head_limit = True
    reading.use(min(at, opens), at + 1)
    return at + 1
