"""The plan a question is linked into (measures, dimensions, conditions, order, limit),
the statement it becomes, and the small helpers every step shares (quoting, type
classes, comparing measures)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from services.sql.catalog import (
    SAMPLE_VALUES,
    TEXT_TYPES,
    ColumnInfo,
    JoinGraph,
    TableInfo,
    is_number,
)
from services.sql.gate import identifier
from services.sql.linker._mentions import OPTIONAL_TABLE_PARTS
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.results import code_description as shown_description
from services.sql.results import numbered_key
from services.sql.words import (
    STOP_WORDS,
    common_prefix,
    name_words,
    stem,
    word_match,
)


class LinkError(Exception):
    """The question does not map onto this schema; the message says what was missing.

    ``phrase`` is the question's words the linker could not place (empty when the refusal
    is about something else, such as a join or a check of the statement): the refusal is
    explained from it — nearest tables and columns, names it did find — never by parsing
    the message."""

    def __init__(self, message: str, *, phrase: str = "") -> None:
        super().__init__(message)
        self.phrase = phrase


@dataclass(frozen=True)
class Linked:
    """The composed statement, the tables it reads, and which definitions it used."""

    sql: str
    tables: tuple[str, ...]
    explanation: str
    applied: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def quote(name: str) -> str:
    return identifier(name).sql(dialect="postgres")


def lit(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="postgres")


@dataclass
class Measure:
    func: str  # COUNT, COUNT_DISTINCT, SUM, AVG, MIN, MAX, EXPR
    col: Col | None = None
    table: TableInfo | None = None  # COUNT of a table's rows
    # EXPR: operators and numbers as text, operands as ("__M__", measure) pairs
    expr: list[object] = field(default_factory=list)
    label: str = ""
    filter: tuple[Col, str] | None = None  # FILTER (WHERE …), {c} for the column
    partition: Col | None = None  # RANK: PARTITION BY
    dow: bool = False  # counts only weekend (or weekday) rows; the date column comes later
    descending: bool = True  # RANK: order of the ranked measure
    tables: tuple[TableInfo, ...] = ()


@dataclass
class Dim:
    col: Col
    grain: str = ""
    pending: bool = False  # a time grain whose date column is not chosen yet
    # the table's key read as what names its rows ("which museums"), not asked for by
    # the words: a listing shows it by the label rule, not by the wording (``_unasked``)
    naming_key: bool = False


@dataclass
class Plan:
    dims: list[Dim] = field(default_factory=list)
    measures: list[Measure] = field(default_factory=list)
    filters: list[tuple[Col, str]] = field(
        default_factory=list
    )  # (column, condition text with {c})
    anti: list[TableInfo] = field(default_factory=list)
    semi: list[TableInfo] = field(default_factory=list)
    ors: list[list[tuple[Col, str]]] = field(default_factory=list)  # OR-ed conditions
    having: list[tuple[Measure, str, int]] = field(default_factory=list)  # count op number
    # conditions defined in SQL by the glossary: the parsed tree and its resolved columns
    raw: list[tuple[exp.Expr, dict[int, Col]]] = field(default_factory=list)
    raw_terms: list[str] = field(default_factory=list)  # the glossary term of each ``raw``
    order: list[tuple[str, bool]] = field(default_factory=list)  # (expression alias/index, desc)
    limit: int = 0
    distinct: bool = False
    entity: TableInfo | None = None  # grouped/listed entity (keys kept in GROUP BY)
    # columns not shown that break ties at a cut (and are grouped): the ranked entity's
    # names and key, where what is shown is its attribute
    ties: list[Col] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    # tables a condition reads inside a subquery (NOT EXISTS over a join path), and each
    # such absence in words ("pets with pettype = 'cat'")
    inner: list[TableInfo] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)

    def shown_alone(self) -> Col | None:
        """The one column the plan shows (no other, no measure, not of its table's
        key), else None: a stored value set equal to it, or to a column joined to it,
        would only be returned as itself, so a value another column also holds is
        placed there instead (``verify`` refuses the rest)."""
        if self.measures or len(self.dims) != 1 or self.dims[0].grain:
            return None
        col = self.dims[0].col
        # a column of the table's key says which rows there are ("Which airports are
        # JFK?"): an answer of its own, not a value repeated
        return None if col.column.name in col.table.primary_key else col


def bare_count(item: object) -> bool:
    """A count the output list asks for without saying of what ("the total count")."""
    return (
        isinstance(item, Measure)
        and item.func == "COUNT"
        and item.table is None
        and item.col is None
        and item.filter is None
        and not item.dow
    )


def fans_out(graph: JoinGraph, entity: TableInfo, tables: set[str]) -> bool:
    """Whether joining ``tables`` to ``entity`` can repeat its rows: the way to one of
    them starts at a table that references the entity (one entity, many of them). Rows
    of the entity listed so are each listed once (DISTINCT): "the airlines that flew to
    Honolulu" are airlines, not one airline per flight."""
    for name in tables - {entity.qualified}:
        path = graph.path(entity.qualified, name)
        if path and path[0].parent == entity.qualified and path[0].child != entity.qualified:
            return True
    return False


def table_sql(table: TableInfo) -> str:
    return f"{quote(table.schema)}.{quote(table.name)}"


def is_temporal(data_type: str) -> bool:
    return data_type == "date" or data_type.startswith("timestamp")


# Types of measured quantities: a key or reference is a whole number or a text.
_FRACTIONAL = ("real", "double precision", "float")


def is_key(col: Col) -> bool:
    """A key or reference column: the primary key, or one named for an id ("stuid",
    "customer_id"). A fractional column is a measure whatever its name's last letters
    ("humid", a relative humidity): read as a key, "with a humidity above 80" could not
    compare it and the question was refused."""
    name = col.column.name.lower()
    if col.table.primary_key == (col.column.name,):
        return True
    return name.endswith("id") and not col.column.data_type.startswith(_FRACTIONAL)


def only_table(
    words: Sequence[str], hits: list[tuple[TableInfo, float]], vocab: Vocabulary
) -> bool:
    """The words name the table and nothing more ("customers", "the drug")."""
    table = hits[0][0]
    names = [p for name in vocab.table_names(table) for p in name]
    return all(any(word_match(w, n) for n in names) for w in words)


def measures_in(measure: Measure) -> list[Measure]:
    """A measure and those inside its formula or rank."""
    found = [measure]

    def walk(node: object) -> None:
        if isinstance(node, Measure):
            found.extend(measures_in(node))
        elif isinstance(node, tuple) and node and node[0] == "m" and isinstance(node[1], Measure):
            found.extend(measures_in(node[1]))
        elif isinstance(node, tuple) and node and node[0] == "op":
            walk(node[2])
            walk(node[3])

    for node in measure.expr:
        walk(node)
    return found


def finish(measure: Measure, label: str, joined: Sequence[TableInfo]) -> Measure:
    """The measure labelled with its whole phrase, joined with the tables it requires."""
    measure.label = label
    measure.tables = (*measure.tables, *joined)
    return measure


def refines(specific: Measure, general: Measure) -> bool:
    """The head's measure names the output's measure more fully (same aggregate, the
    output's words all in the head's)."""
    if specific.func != general.func or specific.col is None or general.col is None:
        return False
    words = {stem(w) for w in re.findall(r"[a-z0-9]+", general.label)} - STOP_WORDS
    more = {stem(w) for w in re.findall(r"[a-z0-9]+", specific.label)}
    return bool(words) and words <= more and len(more) > len(words)


def same_measure(a: Measure, b: Measure) -> bool:
    base = {"COUNT_DISTINCT": "COUNT"}
    fa, fb = base.get(a.func, a.func), base.get(b.func, b.func)
    if fa != fb:
        return False
    if a.col is not None and b.col is not None:
        return a.col.key == b.col.key
    if a.table is not None and b.table is not None:
        return a.table.qualified == b.table.qualified
    return a.col is None and b.col is None and a.table is None and b.table is None


BE = frozenset(["is", "are", "was", "were", "be", "been", "being", "get", "got"])


def like_pattern(value: str) -> str:
    """A LIKE operand that matches ``value`` literally."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- what names a row ------------------------------------------------------------------

FIRST_NAMES = ("first_name", "fname", "firstname")
LAST_NAMES = ("last_name", "lname", "lastname", "surname")


def _name_part(column: str, parts: tuple[str, ...]) -> bool:
    """``column`` ends in one of ``parts`` (``last_name``, ``ContactLastName``); a short
    abbreviation only as a whole word (``emp_lname``), not as the letters a longer word
    ends in (``fullname`` is a whole name, not a last one)."""
    low = column.lower()
    return low in parts or any(low.endswith(p if len(p) > 5 else f"_{p}") for p in parts)


def person_name(table: TableInfo) -> list[Col]:
    """A person's name, said in two columns (first and last): together they name a row,
    before any other "…name" column, which names something else of the person's (a
    doctor's ``med_school_name``)."""
    first = [c for c in table.columns if _name_part(c.name, FIRST_NAMES)]
    last = [c for c in table.columns if _name_part(c.name, LAST_NAMES)]
    return [Col(table, first[0]), Col(table, last[0])] if len(first) == len(last) == 1 else []


def leading_text(table: TableInfo) -> list[Col]:
    """What names a row of a table with no name column whose key is a bare number: the
    text columns declared right after the key, before the first column of another kind
    (``cars``: id, make, model, year … is read as make and model), two at most, as a
    person's name is said in two. A numbered row means nothing to a reader; the words a
    schema puts first after the number are what it calls the row by, where the first
    tells the rows apart (``_tells_apart``): a kind of row is no label. Not a key's column
    (a reference said in text), nor text that holds only numbers (Spider's ``mpg``),
    nor text whose values the catalog did not read (free text, no label)."""
    if len(table.primary_key) != 1 or not table.columns:
        return []
    key = table.columns[0]
    if key.name != table.primary_key[0] or not is_number(key.data_type):
        return []
    run: list[Col] = []
    first = table.columns[1] if len(table.columns) > 1 else None
    if first is None or not _tells_apart(table, first):
        return []
    for column in table.columns[1:]:
        col = Col(table, column)
        if (
            not column.data_type.startswith(TEXT_TYPES)
            or is_key(col)
            or not column.sample_values
            or all(_numeral(v) for v in column.sample_values)
        ):
            break
        run.append(col)
        if len(run) == 2:
            break
    return run


def _tells_apart(table: TableInfo, column: ColumnInfo) -> bool:
    """A label tells rows apart: the column holds as many values as the catalog reads
    (``SAMPLE_VALUES``), or one per row. A pet's type (cat, dog) over many pets is what
    kind of row it is, not what the row is called."""
    values = len(set(column.sample_values))
    return values >= SAMPLE_VALUES or 0 < table.row_estimate <= values


def _numeral(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def grouped_labels(table: TableInfo) -> list[Col]:
    """What names a row of ``table`` in an answer with one row per row of it (grouped by
    its key): a person's first and last name, else every column that names the row (its
    name, the column called what the table is, a code of its own), else the text a
    numbered row is said by (``leading_text``); none when nothing names it.

    One rule for every path that shows an entity per row: the clause reader's groups
    (``clauses._planning``) and a follow-up regrouped onto a table ("and per continent?",
    ``conversation.regrouped``) ask here, so the follow-up shows the columns its question
    spelled out shows, and changes no row doing it (each is one value per key)."""
    if not any(c.name.lower() == "name" for c in table.columns):
        person = person_name(table)
        if person:
            return person
    names = name_columns(table)
    if names:
        # a column called what the table is called names its rows too (``car_makers``'
        # ``maker`` beside ``fullname``): which one is for the engine no more to guess
        names += [c for c in named_as_table(table, head=True) if c not in names]
        # a text key said beside the name (a ticker's symbol), as every reader shows it
        return names + [c for c in code_labels(table) if c not in names]
    return leading_text(table) or code_description(table)


def code_description(table: TableInfo) -> list[Col]:
    """What a row kept by a code is said by (its description beside the code): the one
    rule, ``results.code_description``, which the label rule also reads for a grouping
    by a column that refers to such a table."""
    return [Col(table, c) for c in table.columns if c.name in shown_description(table)]


def numbered_description(table: TableInfo) -> list[Col]:
    """What a row whose key is text of numbers alone is listed by: its description
    (:func:`code_description`), not the digits ('01581' says no territory; 'Westboro'
    does). A key of words or letter codes is read as it is stored and stays the label."""
    return code_description(table) if numbered_key(table) else []


def entity_columns(table: TableInfo) -> list[str]:
    """The columns an answer with one row per row of ``table`` shows for it: its
    one-column key, then what names it (:func:`grouped_labels`), as a grouped answer
    read from the question shows an entity (``clauses._planning._identified``)."""
    key = list(table.primary_key[:1]) if len(table.primary_key) == 1 else []
    return key + [c.column.name for c in grouped_labels(table) if c.column.name not in key]


def name_columns(table: TableInfo) -> list[Col]:
    """Columns that name a row: called ``name`` or ending in it, else a title."""
    names = [c for c in table.columns if c.name.lower() == "name"]
    names = names or [c for c in table.columns if c.name.lower().endswith("name")
                      and not _name_part(c.name, FIRST_NAMES + LAST_NAMES)]  # fmt: skip
    names = names or [c for c in table.columns if c.name.lower().endswith("title")]
    return [Col(table, c) for c in names] or named_as_table(table)


def row_name(table: TableInfo, names: list[Col]) -> list[Col]:
    """Of several columns that name a row (``company_name``, ``contact_name`` of a
    customer), the one the row is called by: the first declared whose stored values are
    one per row (as many distinct values as the table has rows), as a schema puts what
    it calls a row by first. A name many rows share (a match's ``tourney_name``, its
    ``winner_name``) names something else the row has, and none is picked: the key
    stays what names the row. Read from the data (the catalog's values and row count),
    so a table whose values were not read keeps its key."""
    rows = table.row_estimate
    if rows <= 0:
        return []
    for col in names:
        values = set(col.column.known_values or col.column.sample_values)
        if len(values) >= rows:
            return [col]
    return []


def code_labels(table: TableInfo) -> list[Col]:
    """Text keys that name a row beside its name: a ``symbol``, or a ``code`` of the row
    itself (``airport_code`` of an airport, a bare ``code``), said without the prefix the
    table gives every column (``sbTickerSymbol`` -> "symbol"), that tells the rows apart
    as well as their name does.

    A ticker is said by its symbol as much as by its name, and every reader of what
    names a row (a listing's labels, a grouped answer's, ``_lookup.label_columns``)
    asks here, so a ranking of tickers shows the symbol whichever path built it. A code
    of something else the row has (a customer's ``zip_code``, a template's
    ``template_type_code``) describes the row, and a code many rows share (a type) is
    a kind of row: neither names it."""
    names = [c.name for c in table.columns]
    prefix = common_prefix(names, minimum=3) if len(names) >= 4 else ""
    own = {stem(w) for w in name_words(table.name)}
    found = []
    for column in table.columns:
        cut = len(prefix) if prefix and len(column.name) > len(prefix) else 0
        words = [stem(w) for w in name_words(column.name[cut:])]
        said = "symbol" in words or (
            "code" in words and all(w in own for w in words if w != "code")
        )
        if (
            said
            and column.name not in table.primary_key
            and column.data_type.startswith(TEXT_TYPES)
            and _tells_rows_apart(table, column)
        ):
            found.append(Col(table, column))
    return found


def _distinct(column: ColumnInfo) -> int:
    return len(set(column.known_values or column.sample_values))


def _tells_rows_apart(table: TableInfo, column: ColumnInfo) -> bool:
    """Whether a text key tells the rows apart, as far as the catalog knows: declared
    unique, values not read (a catalog built by hand: its name alone says so), as many
    distinct values read as rows (or as the catalog reads), or as many as the rows'
    name holds (broker's symbols repeat where its names do: a listed fund
    twice). A code three values long over many rows is a kind of row, not its label."""
    values = _distinct(column)
    if (column.name,) in table.unique_keys or values == 0:
        return True  # declared, or the data unread: the name says it, as joins by names
    if values >= SAMPLE_VALUES or 0 < table.row_estimate <= values:
        return True
    named = [_distinct(c.column) for c in name_columns(table) if c.column is not column]
    return bool(named) and values >= max(named) > 0


def named_as_table(table: TableInfo, *, head: bool = False) -> list[Col]:
    """A text column called what the table is called: ``airlines.airline``,
    ``course.course``, also without a generic word of the table's name
    (``model_list.model``); with ``head``, also called the last word of a name of
    several (``car_makers.maker``: a maker's short name beside its ``fullname``)."""
    parts = [p for p in re.split(r"[_\W]+", table.name.lower()) if p]
    nouns = {
        stem(table.name.lower()),
        stem("_".join(p for p in parts if p not in OPTIONAL_TABLE_PARTS)),
    }
    if head and len(parts) > 1:
        nouns.add(stem(parts[-1]))
    return [
        Col(table, c) for c in table.columns
        if c.data_type.startswith(TEXT_TYPES) and c.name not in table.primary_key
        and stem(c.name.lower()) in nouns
    ]  # fmt: skip
