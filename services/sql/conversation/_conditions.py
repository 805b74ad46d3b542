"""Filters on an earlier statement: the condition a follow-up's words link to, added to
(or put in place of) the statement's own conditions.

"only those in France", "just the ones older than 40", "exclude cancelled", "where the
price is under 100": the words name a condition on the rows the earlier statement
counted, summed or listed. Which column and which comparison they mean is the schema
linker's to read, as it reads them in any question: each of the statement's tables is
asked about in a question of its own ("Which customers are in France?"), and the
conditions of the statement linked for it are moved onto the earlier statement — its
measure, grouping, order and limit stay as they were. A condition on a table the earlier
statement does not read joins that table by the key the linked statement joined it by,
only where each earlier row meets at most one of its rows (the rows counted stay the
rows counted); a table each earlier row meets many of is the earlier row's having one
(``_semijoin``). Nothing is read from the earlier question's text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from services.sql import verify
from services.sql.catalog import Catalog, JoinGraph, TableInfo, table_for
from services.sql.conversation._existence import at_least_one, existence_words
from services.sql.conversation._inhabitants import as_place
from services.sql.conversation._leading import name_holders, names_capitalised
from services.sql.conversation._semijoin import rival, semi_joined
from services.sql.conversation._statement import FollowUpError, parse, readable, sources
from services.sql.linker import referred_aliases, unsaid_season
from services.sql.words import stem

# A question to its statement (None when it does not link): the ask pipeline's reading.
Link = Callable[[str], Awaitable[str | None]]

# The frames a condition is asked in about one table: the condition as a predicate
# ("… are older than 40"), as a clause of its own ("… with private insurance",
# "… registered before 2010") and as a listing's qualifier.
_FRAMES = (
    "Which {rows} are {condition}?",
    "Which {rows} {condition}?",
    "List the {rows} {condition}.",
)


@dataclass(frozen=True)
class Linked:
    """The conditions a follow-up's words linked to, placed on the earlier statement's
    aliases, and the joins they need."""

    conditions: tuple[exp.Expr, ...]
    joins: tuple[exp.Join, ...]
    columns: frozenset[tuple[str, str]]  # (alias in the earlier statement, column)
    # conditions on each group's aggregate ("with more than 3 transactions" after a count
    # per customer): the earlier statement's HAVING, see :func:`_placed_on_groups`
    having: tuple[exp.Expr, ...] = ()


def subjects(words: str) -> list[str]:
    """A table's name read as the rows it holds: plural ("singer" → "singers"), then as
    named ("cars data")."""
    last = words.rsplit(" ", 1)[-1]
    if last.endswith("s") or last in ("data", "info", "information", "staff", "people"):
        return [words]
    if last.endswith("y") and len(last) > 2 and last[-2] not in "aeiou":
        return [words[:-1] + "ies", words]
    return [words + "s", words]


# A number as said: "30000", "30,000", "1.5", "30k", "2 million".
_NUMBER = re.compile(
    r"(?<![\w.])(?P<n>\d[\d,]*(?:\.\d+)?)\s*(?P<scale>k|m|bn|thousand|million|billion)?\b", re.I
)
_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}


# A number past twelve said in words ("thirty", "forty-five", "nineteen"): the linker
# reads the small ones a count is said with ("more than two"), not these; a follow-up's
# condition says them as a busy writer does ("only the ones under thirty").
_TEENS = ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_UNITS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_WORD_NUMBER = re.compile(
    r"(?<![\w-])(?:(?P<teen>" + "|".join(_TEENS) + r")|(?P<tens>" + "|".join(_TENS) + r")"
    r"(?:[- ](?P<unit>" + "|".join(_UNITS) + r"))?)(?![\w-])",
    re.I,
)


# A small number said in words before the plural noun it counts ("with two engines",
# "three seats"): a count the rows store in a column the noun names, which the linker
# reads only in digits; "more than two" with no noun after it is the linker's own.
_SMALL = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve"]  # fmt: skip
_SMALL_COUNT = re.compile(
    r"(?<![\w-])(?P<n>" + "|".join(_SMALL) + r")(?=\s+[A-Za-z]+s\b)", re.IGNORECASE
)


def in_digits(words: str) -> str:
    """``words`` with each number past twelve said in words written as digits ("under
    thirty" → "under 30", "forty-five" → "45"), and each smaller one before the plural
    noun it counts ("two engines" → "2 engines"), so the frames ask the linker the number
    as it reads numbers, and the check that every number said is compared sees it."""

    def digits(match: re.Match[str]) -> str:
        if match.group("teen"):
            return str(13 + _TEENS.index(match.group("teen").lower()))
        value = 20 + 10 * _TENS.index(match.group("tens").lower())
        unit = match.group("unit")
        return str(value + 1 + _UNITS.index(unit.lower()) if unit else value)

    words = _SMALL_COUNT.sub(lambda m: str(2 + _SMALL.index(m.group("n").lower())), words)
    return _WORD_NUMBER.sub(digits, words)


def said_numbers(words: str) -> list[float]:
    """The numbers ``words`` say, scaled as said ("30k" is 30000)."""
    words = in_digits(words)
    found = []
    for match in _NUMBER.finditer(words):
        value = float(match.group("n").replace(",", ""))
        found.append(value * _SCALES.get((match.group("scale") or "").lower(), 1))
    return found


def in_full(words: str) -> str:
    """``words`` with each number written out as digits ("more than 30k" → "more than
    30000", "2 million" → "2000000", "30,000" → "30000"): the condition's own frames
    say the number the words say, whatever scale the linker would read a suffix as."""

    def full(match: re.Match[str]) -> str:
        if not match.group("scale") and "," not in match.group("n"):
            return match.group(0)  # as said: "04" of a date stays "04"
        value = float(match.group("n").replace(",", ""))
        value *= _SCALES.get((match.group("scale") or "").lower(), 1)
        return str(int(value)) if value == int(value) else str(value)

    return _NUMBER.sub(full, in_digits(words))


def _compared_numbers(conditions: Sequence[exp.Expr]) -> set[float]:
    """The numbers a statement's conditions compare with: number literals, and the years
    of date literals and the years beside them ("after 2005" is ``>= '2006-01-01'``)."""
    found: set[float] = set()
    for condition in conditions:
        for literal in condition.find_all(exp.Literal):
            text = literal.this
            if not literal.is_string:
                try:
                    found.add(float(text))
                except ValueError:
                    continue
            elif re.match(r"^\d{4}-\d{2}-\d{2}", text):
                year = int(text[:4])
                found |= {float(year - 1), float(year), float(year + 1)}
            elif re.fullmatch(r"-?\d+(?:\.\d+)?", text):
                found.add(float(text))
    return found


async def link_condition(
    sql: str, condition: str, catalog: Catalog, link: Link, *, about: TableInfo | None = None
) -> Linked:
    """The conditions ``condition`` links to about the earlier statement's rows, asked of
    each of its tables in turn (its first table first; only ``about`` where given: the
    rows the words named): the first reading whose every condition can be placed on the
    earlier statement and compares every number the words say, as said (a "30k" read as
    30 is no reading of it)."""
    select = parse(sql)
    said = said_numbers(condition)
    tried = False
    conditions = [condition]
    if (unnamed := _without_own_word_for_rows(condition, catalog)) is not None:
        conditions.append(unnamed)
    if (place := as_place(condition, catalog)) is not None:
        conditions.append(place)  # "Californians" → "in California" (see _inhabitants)
    if (named := names_capitalised(condition, catalog.tables)) is not None:
        conditions.append(named)  # "united" → "United", a stored name's lead (_leading)
    for said_as in conditions:
        for table in _own_tables(select, catalog):
            if about is not None and table.qualified != about.qualified:
                continue
            named = readable(table, catalog)
            words = in_full(_without_subject(said_as, named))
            for rows in subjects(named):
                for frame in _FRAMES:
                    linked = await link(frame.format(rows=rows, condition=words))
                    if linked is None:
                        continue
                    tried = True
                    placed = _placed(select, linked, catalog, existence_words(said_as))
                    compared = (
                        _compared_numbers((*placed.conditions, *placed.having)) if placed else set()
                    )
                    if placed is not None and set(said) <= compared:
                        return placed
    if (twice := _met_twice(condition, select, catalog)) is not None:
        raise FollowUpError(twice)
    # a season no reading placed: its months are unsaid, where the rows keep them
    if (season := unsaid_season(condition, _own_tables(select, catalog))) is not None:
        raise FollowUpError(season)
    if tried:
        raise FollowUpError(f"'{condition}' links to a condition the previous answer cannot take")
    raise FollowUpError(f"no column of the previous answer's tables fits '{condition}'")


def _met_twice(condition: str, select: exp.Select, catalog: Catalog) -> str | None:
    """The refusal for a condition naming (in lower case) a stored name of a table the
    earlier statement's table reaches by two references ("newark" of an airport's name
    after a count of flights: the flights' origin or their destination?), naming both;
    None otherwise. Said only once no reading placed the words: which reference is meant
    is never guessed, and the refusal says what would decide it."""
    graph = JoinGraph(catalog)
    own = _own_tables(select, catalog)
    for held in name_holders(condition, catalog.tables):
        if held in {t.qualified for t in own}:
            continue
        for table in own:
            edges = graph.between(table.qualified, held)
            if len(edges) > 1:
                said = " or ".join(f"{table.name}.{e.column_of(table.qualified)}" for e in edges)
                return (
                    f"'{condition}' names {held.rsplit('.', 1)[-1]}, reached from {table.name} "
                    f"by {len(edges)} references and the words do not say which: {said}?"
                )
    return None


def _without_subject(condition: str, named: str) -> str:
    """The condition without the table's own name in front ("cars that cost more than
    30k" about the cars → "that cost more than 30k")."""
    words = condition.split()
    names = named.split()
    head = [stem(w) for w in words[: len(names)]]
    if len(words) > len(names) and head == [stem(n) for n in names]:
        return " ".join(words[len(names) :])
    return condition


# What may follow the rows' own noun in a condition: a preposition or a relative word
# ("the readings in December", "readings with a wind speed above 10", "trips that ...").
_AFTER_ROWS = frozenset((
    "in", "from", "with", "without", "that", "which", "who", "whose", "where", "above",
    "below", "over", "under", "at", "on", "during", "before", "after", "since", "between",
))  # fmt: skip


def _without_own_word_for_rows(condition: str, catalog: Catalog) -> str | None:
    """The condition without a plural noun it starts with that names no table and no
    column of the schema, when a preposition or relative word follows it: the user's own
    word for the earlier rows ("just the readings in December" after an average over
    ``weather`` → "in December"). None otherwise: a noun the schema names is a condition
    on those rows ("flights in December" about airports counts their flights), and is
    read as said. Tried only after the condition as said links to nothing."""
    words = condition.split()
    if len(words) == 2 and words[0].isalpha():
        noun, rest = words[1].lower(), words[0]  # "afternoon readings" → "afternoon"
    elif len(words) >= 3 and words[1].lower() in _AFTER_ROWS:
        noun, rest = words[0].lower(), " ".join(words[1:])
    else:
        return None
    if not (noun.isalpha() and noun.endswith("s") and len(noun) > 3):
        return None
    named = {
        stem(w)
        for table in catalog.tables
        for name in (table.name, *(c.name for c in table.columns))
        for w in re.split(r"[^a-z0-9]+", name.lower())
        if w
    }
    return None if stem(noun) in named else rest


def _own_tables(select: exp.Select, catalog: Catalog) -> list[TableInfo]:
    found: list[TableInfo] = []
    for source in sources(select):
        info = table_for(catalog, source)
        if info is not None and info not in found:
            found.append(info)
    return found


def _placed(
    select: exp.Select,
    linked_sql: str,
    catalog: Catalog,
    named: tuple[str, ...] | None = None,
) -> Linked | None:
    """The linked statement's WHERE conditions on the earlier statement's aliases (None
    when it has none, or one needs a table that cannot be joined without changing the
    rows: a table met more than once, a join to many rows). ``named``: the noun of words
    that say only that a related row exists (``_existence``), whose reading has no
    condition but the join itself."""
    try:
        linked = sqlglot.parse_one(linked_sql, dialect="postgres")
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(linked, exp.Select):
        return None
    if linked.args.get("having"):
        on_groups = _placed_on_groups(select, linked, catalog)
        if on_groups is not None or named is None or not at_least_one(linked):
            return on_groups
        # "that have at least one concert": a count of one or more is the having of one
        linked.set("group", None)
        linked.set("having", None)
    where = linked.args.get("where")
    if where is None and named is None:
        return None
    # Every alias of the linked statement gets a name of its own, so a sub-query's
    # aliases never meet the earlier statement's.
    renamed = {
        t.alias_or_name.lower(): f"f_{t.alias_or_name.lower()}" for t in linked.find_all(exp.Table)
    }
    for table in linked.find_all(exp.Table):
        table.set(
            "alias", exp.TableAlias(this=exp.to_identifier(renamed[table.alias_or_name.lower()]))
        )
    for column in linked.find_all(exp.Column):
        if column.table and column.table.lower() in renamed:
            column.set("table", exp.to_identifier(renamed[column.table.lower()]))
    earlier: dict[str, str] = {}  # qualified table → its alias in the earlier statement
    referred = referred_aliases(select, catalog)  # a self-join's other row: not the rows
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None or source.alias_or_name in referred:
            continue
        if info.qualified in earlier:
            earlier[info.qualified] = ""  # met twice: which one is meant is not known
        else:
            earlier[info.qualified] = source.alias_or_name
    mine = {s.alias_or_name: table_for(catalog, s) for s in sources(linked)}
    aliases: dict[str, str] = {}  # linked alias → alias in the earlier statement
    for alias, info in mine.items():
        if info is not None and earlier.get(info.qualified):
            aliases[alias] = earlier[info.qualified]
    own = dict(aliases)  # the earlier statement's own tables, before any join
    joins: list[exp.Join] = []
    if where is None:
        bare = semi_joined(linked, own, mine, catalog, named)
        return None if bare is None else Linked(tuple(bare[0]), (), frozenset(bare[1]))
    needed = {c.table for c in where.find_all(exp.Column) if c.table in mine}
    for _ in range(len(mine)):
        missing = needed - set(aliases)
        if not missing:
            break
        for alias in sorted(missing):
            join = _to_one(linked, alias, mine, aliases)
            if join is None:
                continue
            joins.append(join)
            aliases[alias] = alias
    if needed - set(aliases):
        # rows each earlier row has many of: the earlier row's having one (a semi-join)
        semi = semi_joined(linked, own, mine, catalog)
        if semi is None:
            return None
        return Linked(tuple(semi[0]), (), frozenset(semi[1]))
    condition = where.this.copy()
    columns: set[tuple[str, str]] = set()
    for column in condition.find_all(exp.Column):
        if column.table in aliases:
            placed = aliases[column.table]
            column.set("table", exp.to_identifier(placed))
            columns.add((placed, column.name))
    for join in joins:
        for column in join.find_all(exp.Column):
            if column.table in aliases:
                column.set("table", exp.to_identifier(aliases[column.table]))
    return Linked(tuple(verify.conjuncts(condition)), tuple(joins), frozenset(columns))


def _placed_on_groups(select: exp.Select, linked: exp.Select, catalog: Catalog) -> Linked | None:
    """A condition on each group's aggregate ("with more than 3 transactions"), which the
    linker reads as ``GROUP BY <the rows' key> HAVING COUNT(...) > 3``, as the earlier
    statement's own HAVING: only where the earlier statement already groups the same rows
    the same way over the same tables joined by the same keys, so the aggregate counts
    (or sums) in each earlier group exactly the rows it counted in the linked one. Every
    linked table is one the earlier statement reads once; the linked grouping, placed,
    is part of the earlier one and the rest of the earlier grouping are columns of a table
    whose whole key the linked one groups by (a customer's name beside its id). None
    otherwise: a count per customer is no condition on a count per state."""
    group = select.args.get("group")
    linked_group = linked.args.get("group")
    if group is None or linked_group is None or linked.args.get("where") is not None:
        return None
    earlier: dict[str, str] = {}
    infos: dict[str, TableInfo] = {}
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None or info.qualified in earlier:
            return None  # a table met twice: which one is meant is not known
        earlier[info.qualified] = source.alias_or_name
        infos[source.alias_or_name] = info
    aliases: dict[str, str] = {}
    for source in sources(linked):
        info = table_for(catalog, source)
        if info is None or info.qualified not in earlier or source.alias_or_name in aliases:
            return None
        aliases[source.alias_or_name] = earlier[info.qualified]
    if len(aliases) != len(earlier):
        return None  # other rows joined (or left out): the aggregate would count others

    def placed(node: exp.Expr) -> exp.Expr | None:
        copied = node.copy()
        for column in copied.find_all(exp.Column):
            if column.table not in aliases:
                return None
            column.set("table", exp.to_identifier(aliases[column.table]))
        return copied

    def pairs(statement: exp.Select, rename: bool) -> set[frozenset[tuple[str, str]]] | None:
        found: set[frozenset[tuple[str, str]]] = set()
        for join in statement.args.get("joins") or ():
            on = join.args.get("on")
            if on is None or join.args.get("side") or join.args.get("kind"):
                return None
            on = placed(on) if rename else on
            if on is None:
                return None
            for equality in verify.conjuncts(on):
                if not isinstance(equality, exp.EQ):
                    return None
                sides = (equality.this, equality.expression)
                if not all(isinstance(c, exp.Column) for c in sides):
                    return None
                found.add(frozenset((c.table.lower(), c.name.lower()) for c in sides))
        return found

    mine, theirs = pairs(linked, rename=True), pairs(select, rename=False)
    if mine is None or theirs is None or mine != theirs:
        return None
    grouped = {
        (c.table.lower(), c.name.lower()) for c in group.expressions if isinstance(c, exp.Column)
    }
    if len(grouped) != len(group.expressions):
        return None
    said: set[tuple[str, str]] = set()
    for column in linked_group.expressions:
        moved = placed(column) if isinstance(column, exp.Column) else None
        if not isinstance(moved, exp.Column):
            return None
        said.add((moved.table.lower(), moved.name.lower()))
    if not said <= grouped:
        return None
    for table, _name in grouped - said:
        info = next((i for a, i in infos.items() if a.lower() == table), None)
        key = {(table, k.lower()) for k in info.primary_key} if info is not None else set()
        if not key or not key <= said:
            return None
    having = placed(linked.args["having"].this)
    if having is None:
        return None
    columns = {(c.table, c.name) for c in having.find_all(exp.Column)}
    return Linked((), (), frozenset(columns), tuple(verify.conjuncts(having)))


def _to_one(
    linked: exp.Select, alias: str, mine: dict[str, TableInfo | None], placed: dict[str, str]
) -> exp.Join | None:
    """The linked statement's join of ``alias`` when it meets one row per row of a placed
    table: an equality of the joined table's whole key with columns of placed tables."""
    info = mine.get(alias)
    if info is None or not info.primary_key:
        return None
    for join in linked.args.get("joins") or ():
        if not isinstance(join.this, exp.Table) or join.this.alias_or_name != alias:
            continue
        on = join.args.get("on")
        if on is None or join.args.get("kind") or join.args.get("side"):
            return None
        keyed: set[str] = set()
        for equality in verify.conjuncts(on):
            if not isinstance(equality, exp.EQ):
                return None
            sides = [equality.this, equality.expression]
            if not all(isinstance(s, exp.Column) for s in sides):
                return None
            own = [s for s in sides if s.table == alias]
            other = [s for s in sides if s.table != alias]
            if len(own) != 1 or len(other) != 1 or other[0].table not in placed:
                return None
            keyed.add(own[0].name)
        if keyed == set(info.primary_key):
            copied: exp.Join = join.copy()
            return copied
    return None


def where_conjuncts(select: exp.Select) -> list[exp.Expr]:
    """The top-level AND-ed conditions of a statement's WHERE."""
    where = select.args.get("where")
    return verify.conjuncts(where.this) if where is not None else []


def columns_of(condition: exp.Expr) -> set[tuple[str, str]]:
    return {(c.table, c.name) for c in condition.find_all(exp.Column)}


def with_conditions(
    sql: str,
    linked: Linked,
    *,
    exclude: bool = False,
    instead: bool = False,
) -> str:
    """``sql`` keeping only the rows ``linked``'s conditions hold for (or, with
    ``exclude``, those they do not); with ``instead`` its own conditions on the same
    columns are dropped first ("what about older than 40?" after "older than 30")."""
    select = parse(sql)
    if linked.having:
        return _with_having(select, linked, exclude=exclude, instead=instead)
    kept = where_conjuncts(select)
    if instead:
        kept = [c for c in kept if not (columns_of(c) and columns_of(c) <= linked.columns)]
        if len(kept) == len(where_conjuncts(select)):
            raise FollowUpError("the previous answer has no condition on what the words name")
    elif not exclude:
        kept = [c for c in kept if not _contradicted(c, linked)]
        if any(rival(c, new) for c in kept for new in linked.conditions):
            raise FollowUpError("the words may add to the related rows asked for or replace them")
    new = [c.copy() for c in linked.conditions]
    added: exp.Expr = exp.and_(*new) if len(new) > 1 else new[0]
    if exclude:
        added = exp.Not(this=exp.Paren(this=added))
    for join in linked.joins:
        select.append("joins", join.copy())
    parts = [*(c.copy() for c in kept), added]
    select.set("where", exp.Where(this=_and(parts)))
    return select.sql(dialect="postgres")


def _with_having(select: exp.Select, linked: Linked, *, exclude: bool, instead: bool) -> str:
    """The earlier statement with ``linked``'s conditions on each group's aggregate added
    to its HAVING (negated with ``exclude``; with ``instead`` in place of its own)."""
    own = select.args.get("having")
    kept = [] if own is None else verify.conjuncts(own.this)
    if instead:
        if not kept:
            raise FollowUpError("the previous answer has no condition on what the words name")
        kept = []
    new = [c.copy() for c in linked.having]
    added: exp.Expr = exp.and_(*new) if len(new) > 1 else new[0]
    if exclude:
        added = exp.Not(this=exp.Paren(this=added))
    select.set("having", exp.Having(this=_and([*(c.copy() for c in kept), added])))
    return select.sql(dialect="postgres")


def _equality(condition: exp.Expr) -> tuple[tuple[str, str], exp.Literal] | None:
    """(column, literal) of a ``column = literal`` condition, either way round."""
    if not isinstance(condition, exp.EQ):
        return None
    left, right = condition.this, condition.expression
    if isinstance(left, exp.Literal) and isinstance(right, exp.Column):
        left, right = right, left
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
        return (left.table, left.name), right
    return None


def _contradicted(condition: exp.Expr, linked: Linked) -> bool:
    """Whether ``condition`` (the earlier statement's) says the column equals one value
    and a linked condition says it equals another: "only the ones with 1 engine" after
    "planes with 4 engines". Kept, the two would leave no row - an answer of nothing
    (a count of 0) that no one asked for; the narrowing can only mean the other value,
    so the earlier one is dropped, as a value swap replaces it."""
    said = _equality(condition)
    if said is None:
        return False
    for new in linked.conditions:
        other = _equality(new)
        if other is not None and other[0] == said[0] and other[1] != said[1]:
            return True
    return False


def _and(parts: Sequence[exp.Expr]) -> exp.Expr:
    wrapped = [p if isinstance(p, exp.Paren | exp.Not) else exp.Paren(this=p) for p in parts]
    return list(itertools.accumulate(wrapped, lambda a, b: exp.And(this=a, expression=b)))[-1]
