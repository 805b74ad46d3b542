"""Whose attribute an item is: "the names of the courses", "the course names" say the
rows the attribute is of, and the column shown must be one of theirs.

A column phrase resolves to whichever table has a column of that name, and where only
one table has it (``teacher.name``) that table became the rows listed, the rows the
question named ("of the courses") only joined to them: the teachers of the courses, a
confident wrong answer. So the rows said of an item hold it to their own columns, or to
those of a table each of their rows refers to (one row each, whose columns are theirs
too: "the name of each course's teacher" where a course has one); the columns of a
table that only joins to them are something else's. Where the rows have no column of
that name, "name" is what names a row of theirs (``_plan.name_columns``: a column
called ``name`` or ending in it, a title, a text column called what the table is
called: ``course.course``); where nothing names them, or the attribute is another, the
reader declines, and the statement the list reading makes goes to the verifier.
"""

from __future__ import annotations

from services.sql.catalog import JoinGraph, TableInfo
from services.sql.linker._plan import name_columns
from services.sql.linker.clauses._reading import Decline, Item, Read, Reading

# what the rows are said with after "of" ("the names of all courses")
_DETERMINERS = frozenset({"the", "all", "each", "every", "these", "those"})

# words that ask for what names a row (the item said no more than that)
_NAME_WORDS = frozenset({"name", "names"})


def rows_said(reading: Reading, item: Item) -> TableInfo | None:
    """The table whose rows ``item`` is said of: the table named right before it ("the
    course names") or right after its "of" ("the names of the courses"); None when no
    table is said there, or the table's noun is itself a possessor ("each course's
    teacher": the teacher is whose the name is, a noun the table mention ends before),
    or the item's own words name its table ("the names of the teachers of each course":
    the teachers' names, listed per course; "the purchase prices of the bikes": the
    purchases' prices, ``purchases.purchase_price``)."""
    if not item.mentions or item.func or item.table is not None:
        return None
    if any(m.with_table for m in item.mentions) or _names_its_table(reading, item):
        return None
    k = item.end
    if reading.low(k) == "of":
        j = reading.skip(k + 1, _DETERMINERS)
        tables = [m for m in reading.longest(j, ("table",)) if m.table is not None]
        columns = reading.longest(j, ("column",))
        if not tables or (columns and columns[0].size > tables[0].size):
            return None
        end = tables[0].end
        if reading.longest(end, ("table", "column")):
            return None  # a possessor: whose the rows are is said next
        return tables[0].table
    for j in range(item.start - 1, max(-1, item.start - 4), -1):
        before = [m for m in reading.longest(j, ("table",)) if m.end == item.start and m.table]
        if before:
            return before[0].table
    return None


def _names_its_table(reading: Reading, item: Item) -> bool:
    """Whether a word of the item names the table of a column it mentions."""
    said = {reading.tokens[k].stem for k in range(item.start, item.end)}
    words = reading.ctx.vocab.table_words
    return any(
        m.col is not None and said & set(words.get(m.col.table.qualified, ()))
        for m in item.mentions
    )


def hold_to_rows(reading: Reading, read: Read, graph: JoinGraph) -> None:
    """Each item said of rows held to their columns (see the module): where none of its
    mentions is a column of theirs, it is read as the rows' name, or :class:`Decline`."""
    for item in read.items:
        rows = rows_said(reading, item)
        if rows is None:
            continue
        own = {rows.qualified} | {
            e.parent for e in graph.edges_of(rows.qualified) if e.child == rows.qualified
        }
        if any(m.col is not None and m.col.table.qualified in own for m in item.mentions):
            continue  # the resolver prefers the rows' own column (``_Resolver``)
        words = {reading.low(k) for k in range(item.start, item.end)}
        if words <= _NAME_WORDS and name_columns(rows):
            # "the names of the courses": what names a course (``course.course``)
            item.mentions, item.label = [], True
            read.mention_table(rows)
            read.entity = read.entity or rows
            if read.entity is not rows:
                raise Decline(f"the name of {rows.name}, but the rows are another table's")
            continue
        said = " ".join(reading.low(k) for k in range(item.start, item.end))
        raise Decline(f"{rows.name} has no {said!r} of its own")
