"""Clauses about events and scope: "When did …", a year said of the column an event is
named after ("museums opened in 2010"), the rows a ranking is taken across, and a count
asked after a clause.
"""

from __future__ import annotations

from services.sql.linker._dates import DATE_NAME_WORDS, PLAUSIBLE_YEARS
from services.sql.linker._mentions import (
    Mention,
)
from services.sql.linker._plan import (
    is_temporal,
)
from services.sql.linker._vocabulary import Col
from services.sql.linker.clauses._cues import WHEN_PARTS, WHEN_PREPOSITIONS
from services.sql.linker.clauses._head import read_items
from services.sql.linker.clauses._reading import Condition, Item, Read, Reading, is_year
from services.sql.words import irregular_past, lemma, word_match


def event_column(reading: Reading, i: int) -> Col | None:
    """The one date or year column whose name is the word at ``i`` and words saying it
    is a date ("opened" for ``open_year``, "effective" for ``date_effective_from``)."""
    token = reading.tokens[i] if i < reading.size else None
    if token is None or token.quoted or token.number is not None or len(token.low) < 4:
        return None
    vocab = reading.ctx.vocab
    found = []
    for col in vocab.columns:
        parts = _split_when(vocab.column_words[col.key])
        # "of" joins a date to its event (``date_of_birth``): no part of the event
        event = [p for p in parts if p not in WHEN_PARTS and p != "of"]
        dated = is_temporal(col.column.data_type) or "year" in parts
        if (
            dated
            and len(event) == 1
            and len(parts) > 1
            and (
                word_match(token.stem, event[0]) >= 0.9
                or word_match(lemma(token.low), event[0]) >= 0.9
            )
        ):
            found.append(col)
    return found[0] if len(found) == 1 else None


def _split_when(parts: list[str]) -> list[str]:
    """A name's words with a date word run into another split off: a folded
    ``sbCustJoinDate`` is the one word "joindate", which is "join" + "date"."""
    split: list[str] = []
    for part in parts:
        tail = next(
            (w for w in DATE_NAME_WORDS if part.endswith(w) and len(part) >= len(w) + 3), ""
        )
        split += [part[: -len(tail)], tail] if tail else [part]
    return split


def scope_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "most common across all people", "over all the visits": the rows an aggregate or a
    ranking is taken over, which the statement reads whole: no condition."""
    if reading.low(i) not in ("across", "over") or reading.low(i + 1) != "all":
        return None
    j = reading.skip(i + 2, frozenset({"the"}))
    tables = reading.longest(j, ("table",))
    if not tables or tables[0].table is None:
        return None
    read.mention_table(tables[0].table)
    reading.use(i, tables[0].end)
    return tables[0].end


def later_count(reading: Reading, read: Read, i: int) -> int | None:
    """ "the name and theme for all concerts *and the number of singers* in each": a count
    asked after a clause, read as one more item."""
    if reading.low(i) not in ("and", ",") or read.kind == "count":
        return None
    j = reading.skip(i + 1, frozenset({"the", "their", "its", "corresponding", "total"}))
    if not reading.match(j, ("number of", "count of", "numbers of")):
        return None
    reading.use(i, j)
    return read_items(reading, read, j)


def when_event(reading: Reading, read: Read, i: int) -> int | None:
    """ "When did the customers join?": the word a date or year column is named after
    ("join" for ``sbCustJoinDate``, "opened" for ``open_year``) is what the answer lists."""
    if not read.when:
        return None
    col = event_column(reading, i)
    if col is None:
        return None
    read.when = False
    mention = Mention("column", i, i + 1, 1.0, col=col)
    read.items.append(Item("", i, i + 1, [mention]))
    read.mention_table(col.table)
    reading.use(i, i + 1)
    return i + 1


def event_clause(reading: Reading, read: Read, i: int) -> int | None:
    """ "museums opened in 2010", "templates became effective before 2005", "went on the
    market after 2016": the word a date or year column is named after, then a year, is
    a condition on that column (a year column compared with the year, a date column
    kept to the year's dates)."""
    j = i + 1
    op = WHEN_PREPOSITIONS.get(reading.low(j))
    if op is None or not is_year(reading, j + 1):
        return None  # the cheap test first: the column scan runs only before a year
    col = event_column(reading, i)
    if col is None and reading.low(j + 2) not in _MORE_YEARS:
        col = _dated_by_participle(reading, i)
    if col is None:
        return None
    year = int(reading.number(j + 1) or 0)
    read.conditions.append(Condition(i, j + 2, [], op, str(year), dimension="when", col=col))
    read.mention_table(col.table)
    reading.use(i, j + 2)
    return j + 2


# Words after a year that say more years follow ("in 2014 or 2015", "from 2010 to 2012"):
# the year alone is not the whole condition, so no participle takes it.
_MORE_YEARS = frozenset({"or", "and", "to", "through", "until", "-", ","})


def _dated_by_participle(reading: Reading, i: int) -> Col | None:
    """ "planes *built* before 1960": a participle right after a table's noun, then a
    year, dates that table's rows; when the table holds one dated column only (a date,
    or an integer column named for a year whose every value is a year, as
    ``planes.year``), that column is the one the year bounds, whatever verb says it.
    None when the word is no participle, no table's noun precedes it, or the table has
    none or several dated columns (a flight's ``year`` and ``time_hour``: the verb would
    have to say which)."""
    low = reading.low(i)
    if not (irregular_past(low) or (len(low) > 4 and low.endswith("ed"))):
        return None
    for start in range(i - 1, max(-1, i - 4), -1):
        tables = [m for m in reading.longest(start, ("table",)) if m.end == i and m.table]
        if not tables:
            continue
        table = tables[0].table
        assert table is not None
        dated = [
            Col(table, c)
            for c in table.columns
            if is_temporal(c.data_type)
            or (
                c.span is not None
                and "year" in reading.ctx.vocab.column_words[(table.qualified, c.name)]
                and PLAUSIBLE_YEARS[0] <= c.span[0] <= c.span[1] <= PLAUSIBLE_YEARS[1]
            )
        ]
        return dated[0] if len(dated) == 1 else None
    return None
