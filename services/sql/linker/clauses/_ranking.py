"""Clauses that order, group and cut: "in descending order of", "for each", "the top 3",
superlatives ("the youngest", "the most concerts", "the most common").
"""

from __future__ import annotations

from services.sql.catalog import TableInfo
from services.sql.linker._mentions import Mention
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._cues import (
    AMOUNT,
    DIRECTIONS,
    GROUP_PHRASES,
    MOST,
    ORDER_PHRASES,
    RANKED,
    RELATIVE,
)
from services.sql.linker.clauses._reading import Item, Rank, Read, Reading, table_first
from services.sql.words import FROM, TO, bare_agent_said, name_direction, names_agent, stem

_VERB_WORDS = 3  # "who has performed in the most concerts": the words a verb may take


def ranked_table(reading: Reading, i: int) -> TableInfo | None:
    """The table a superlative at ``i`` ranks the rows of, where the question names it
    just before, joined by a relative word and at most a verb ("the document with the
    most paragraphs", "the 2 users who received the most notifications"): a table, and
    no column, is what the superlative chooses one row (or n rows) of. None where no
    table is named there, or several tables are named alike."""
    k = i - 1
    while k >= 0 and reading.low(k) in ("the", "a", "an"):
        k -= 1
    verb = 0
    while k >= 0 and reading.low(k) not in RELATIVE and verb < _VERB_WORDS:
        if reading.chart.covering(k) or reading.number(k) is not None:
            return None
        k, verb = k - 1, verb + 1
    if k < 0 or reading.low(k) not in RELATIVE:
        return None
    # the table named by the words before the relative word (a longer column phrase
    # reaching back over "of", "the template id of the document", is another reading)
    tables = [m for m in reading.chart.mentions if m.end == k and m.kind == "table"]
    if not tables:
        return None
    size = max(m.size for m in tables)
    same = [
        m for m in reading.chart.mentions
        if m.end == k and m.size == size and m.kind in ("table", "column")
    ]  # fmt: skip
    best = max(m.score for m in same)
    top = [m for m in same if m.score == best]
    if any(m.kind != "table" for m in top) or len({m.table.qualified for m in top if m.table}) != 1:
        return None
    return top[0].table


def order_clause(reading: Reading, read: Read, i: int) -> int | None:
    phrase = reading.match(i, tuple(ORDER_PHRASES))
    if phrase:
        n = len(phrase.split())
        j = reading.skip(i + n, frozenset({"the", "their", "its", "his", "her"}))
        target = reading.longest(j, ("column",))
        descending = ORDER_PHRASES[phrase]
        if target:
            end = target[0].end
            direction = reading.match(end, tuple(DIRECTIONS))
            if direction:
                descending = DIRECTIONS[direction]
                reading.use(end, end + len(direction.split()))
            read.order.append((target, descending))
            reading.use(i, end)
            return end + len(direction.split()) if direction else end
        if phrase.startswith(("ordered by", "sorted by", "order by", "sort by", "ranked by")):
            return None
        read.order_items = descending
        reading.use(i, i + n)
        return i + n
    direction = reading.match(i, tuple(DIRECTIONS))
    if direction and (read.order or read.order_items is not None):
        n = len(direction.split())
        if read.order:
            mentions, _ = read.order[-1]
            read.order[-1] = (mentions, DIRECTIONS[direction])
        else:
            read.order_items = DIRECTIONS[direction]
        reading.use(i, i + n)
        return i + n
    return None


def group_clause(reading: Reading, read: Read, i: int) -> int | None:
    phrase = reading.match(i, GROUP_PHRASES)
    if not phrase:
        return None
    n = len(phrase.split())
    j = reading.skip(i + n, _GROUP_SKIPPED)
    columns = reading.longest(j, ("column",))
    tables = reading.longest(j, ("table",))
    if tables and (not columns or tables[0].size >= columns[0].size):
        return _grouped_by_table(reading, read, i, tables)
    if columns:
        read.groups.append(columns)
        reading.use(i, columns[0].end)
        return columns[0].end
    return None


_GROUP_SKIPPED = frozenset({"the", "a", "an", "different", "distinct"})
# Skipped before a column that ends a count ("by their status", "by its type"): the
# counted rows' own column. The two sets differ: "by their region" is read only as a
# column, "by a different region" only as a table's rows; one set would move what either
# outcome reads (ISSUE-45, s63 tidy3, s64 tidy4).
_COLUMN_SKIPPED = frozenset({"the", "their", "its"})


def _grouped_by_table(reading: Reading, read: Read, i: int, tables: list[Mention]) -> int:
    """The rows of the table ``tables`` names are the groups, read from ``i`` to the
    end of its noun; one grouping reading for "in each region" and "by region"."""
    table = tables[0].table
    assert table is not None
    read.groups.append(tables)
    top = {m.table.qualified for m in tables if m.table and m.score == tables[0].score}
    if len(top) == 1:  # several tables said equally: the plan picks one (or none)
        read.mention_table(table)
    reading.use(i, tables[0].end)
    return tables[0].end


def count_by_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "How many companies are there by region?", "count of wallet transactions by
    status": in a counted or measured question, "by" and a name that ends what it says
    is the grouping "in each" / "per" says. Elsewhere "by" orders ("sorted by"), names an
    agent ("made by Ford", "dogs owned by students": after a past participle, as the
    verifier reads it) or ranks ("top 5 by amount"), so it is read here, once, with two
    outcomes:

    - a table's noun (in a count or a measure): that table's rows are the groups, as
      "in each region" reads them; taken as a mention of the table alone it was a join,
      and the count one number over every region (ISSUE-45, s62, byregion);
    - a column that ends the question (in a count only): the column is the grouping
      (ISSUE-45, s62, daily). Only a name, never a value, is read so.

    After a past participle "by" names an agent, except before a bare singular noun
    that names a table by its own name ("flights operated by airline?",
    ``words.bare_agent_said``): no one agent is said, so it groups as "per airline"
    (ISSUE-45, s63, measure2), and only the table outcome reads it.
    """
    if reading.low(i) != "by":
        return None
    passive = names_agent(reading.low(i - 1))
    if passive and not _bare_table_agent(reading, reading.low(i - 1)):
        return None
    if read.kind == "count" or any(item.func for item in read.items):
        j = reading.skip(i + 1, _GROUP_SKIPPED)
        tables = reading.longest(j, ("table",))
        columns = reading.longest(j, ("column",))
        if (
            tables
            and _ends_phrase(reading, tables[0].end)
            and (not columns or tables[0].size >= columns[0].size)
        ):
            return _grouped_by_table(reading, read, i, tables)
    if read.kind != "count" or passive:
        return None
    j = reading.skip(i + 1, _COLUMN_SKIPPED)
    columns = reading.longest(j, ("column",))
    if not columns or columns[0].end < reading.size:
        return None
    read.groups.append(columns)
    reading.use(i, columns[0].end)
    return columns[0].end


def _bare_table_agent(reading: Reading, participle: str) -> bool:
    """Whether the passive after ``participle`` has a bare agent (``bare_agent_said``,
    as the user wrote it) whose words name a table by its own name: a word only near a
    table in meaning ("by boeing") is no table's rows to group by."""
    words = bare_agent_said(reading.ctx.original, participle)
    return bool(words) and bool(reading.ctx.vocab.tables_named([stem(w) for w in words]))


def _ends_phrase(reading: Reading, end: int) -> bool:
    """ "… by region?" or "… by region, …": the table's noun ends what "by" says. One
    said further ("the sales of songs by singers born before 1940", "flights by airline
    JetBlue") names the rows of the songs' singers, whose own rows are restricted: no
    grouping (reading it as one cost a Spider blind first turn, totals only)."""
    if end >= reading.size:
        return True
    question = reading.ctx.question
    return "," in question[reading.tokens[end - 1].end : reading.tokens[end].start]


def top_clause(reading: Reading, read: Read, i: int) -> int | None:
    if reading.low(i) not in ("top", "first") or reading.number(i + 1) is None:
        return None
    read.limit = int(reading.number(i + 1) or 0)
    reading.use(i, i + 2)
    return i + 2


def rank_clause(reading: Reading, read: Read, i: int) -> int | None:
    low = reading.low(i)
    if low in RANKED and reading.low(i + 1) == "first":
        # "singers from France, oldest first": the superlative says the order only, the
        # rows whose dimension is highest (or lowest) first; every row is kept
        dimension, descending = RANKED[low]
        read.ranks.append(Rank(i, [], descending, limit=0, dimension=dimension))
        reading.use(i, i + 2)
        return i + 2
    if low in RANKED:
        dimension, descending = RANKED[low]
        j = i + 1
        tables = reading.longest(j, ("table",))
        end = tables[0].end if tables else j
        if tables:
            assert tables[0].table is not None
            read.mention_table(tables[0].table)
            if read.kind == "list" and not read.items:
                # "list the 2 youngest teachers": the superlative's noun is the rows
                # listed (by their label), as "which 2 teachers are the youngest" says
                read.items.append(Item("", j, end, table=tables[0].table))
        read.ranks.append(Rank(i, [], descending, dimension=dimension))
        reading.use(i, end)
        return end
    common = reading.match(i, ("most common", "most frequent", "most popular", "least common",
                               "least frequent", "least popular"))  # fmt: skip
    if common:
        n = len(common.split())
        j = reading.skip(i + n)
        columns = reading.longest(j, ("column",))
        read.ranks.append(Rank(i, columns, common.startswith("most"), by_count=True))
        end = columns[0].end if columns else i + n
        reading.use(i, end)
        return end
    if low not in MOST:
        return None
    if reading.low(i - 1) == "at":  # "at most 3": a bound
        return None
    j = i + 1
    if reading.low(j) == "number" and reading.low(j + 1) == "of":
        j += 2
    tables = reading.longest(j, ("table",))
    columns = reading.longest(j, ("column",))
    number_of = j != i + 1
    if tables and (not columns or table_first(tables, columns) or number_of):
        table = tables[0].table
        assert table is not None
        read.ranks.append(Rank(i, [], MOST[low], count_of=table, ranked=ranked_table(reading, i)))
        read.mention_table(table)
        reading.use(i, tables[0].end)
        return tables[0].end
    if columns:
        amount = low in AMOUNT
        ranked = ranked_table(reading, i)
        read.ranks.append(Rank(i, columns, MOST[low], amount=amount, ranked=ranked))
        reading.use(i, columns[0].end)
        return columns[0].end
    return None


_DIRECTED = {"from": FROM, "to": TO}


def _from_each_table(
    reading: Reading, way: str, said: list[list[Mention]], columns: list[Col]
) -> bool:
    """ "cars from each country": "from" before a grouping by a table the rows come from
    through their references (a car's maker's country) is the grouping's word, where no
    column of the schema says a direction: with ``origin`` and ``dest`` beside each other
    "from each airport" says which reference, and is left to the column reading."""
    if way != FROM or len(said) != 1 or columns or not said[0]:
        return False
    if any(m.table is None or m.col is not None for m in said[0]):
        return False
    return not any(name_direction(c.name) for t in reading.ctx.catalog.tables for c in t.columns)


def directed_group_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "flights to BOS from each origin airport": a preposition of motion before a
    grouping whose column says that same direction (``flights.origin`` says "from") is
    the grouping's own word, not a condition missing its end point. Any other column, a
    table, or a direction the column does not say is left to the other clauses."""
    way = _DIRECTED.get(reading.low(i))
    if way is None or not reading.match(i + 1, GROUP_PHRASES):
        return None
    groups, tables = len(read.groups), list(read.tables)
    used = set(reading.used)
    after = group_clause(reading, read, i + 1)
    if after is None:
        return None
    said = read.groups[groups:]
    columns = [m.col for mentions in said for m in mentions if m.col is not None]
    if _from_each_table(reading, way, said, columns):
        reading.use(i, i + 1)
        return after
    if (
        len(said) != 1
        or not columns
        or any(m.table is not None and m.col is None for m in said[0])
        or any(name_direction(c.column.name) != way for c in columns)
    ):
        del read.groups[groups:]
        read.tables[:] = tables
        reading.used.clear()
        reading.used.update(used)
        return None
    reading.use(i, i + 1)
    return after
