"""The rule-based SQL generator: lexical schema linking into a structured intent.

No model: the question's words are linked to the catalog (table names and the synonyms
their comments list in parentheses, column names, stored sample values), dates and
numbers are parsed relative to the reference date, and cue words pick the intent's kind
(count, aggregate, group, top-N, list, ratio). The intent is compiled by the intent
compiler, so the SQL is safe by construction and still gated. It never invents a value:
every literal comes from the question or from the catalog's sample values.
"""

from __future__ import annotations

import calendar
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from decimal import Decimal

from services.sql._ask import (
    Failure,
    GeneratorRole,
    ModelCall,
    ModelTier,
    Proposal,
    SchemaView,
    TableChoice,
    Understanding,
)
from services.sql._catalog import Catalog, ColumnInfo, TableInfo, stem
from services.sql._intents import (
    Aggregate,
    Filter,
    FilterOp,
    Group,
    Intent,
    IntentError,
    IntentKind,
    Order,
    TimeGrain,
    Value,
    compile_intent,
    compile_ratio,
    type_class,
)
from services.sql._joins import JoinGraph
from services.sql._linker import (
    LinkError,
    QuestionLinker,
    Vocabulary,
    parse_definitions,
    unexplained,
)

MODEL_NAME = "deterministic"
_log = logging.getLogger("tandem.sql.rules")

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "for",
        "to",
        "by",
        "per",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "we",
        "our",
        "us",
        "you",
        "your",
        "i",
        "me",
        "my",
        "there",
        "their",
        "them",
        "they",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "how",
        "many",
        "much",
        "show",
        "list",
        "give",
        "find",
        "get",
        "tell",
        "all",
        "each",
        "every",
        "any",
        "from",
        "than",
        "as",
        "into",
        "about",
        "across",
        "over",
        "under",
        "between",
        "during",
        "since",
        "before",
        "after",
        "please",
    ]
)
# Word forms the crude stemmer cannot fold.
_IRREGULAR = {
    "won": "won",
    "win": "won",
    "wins": "won",
    "winning": "won",
    "lose": "lost",
    "loses": "lost",
    "losing": "lost",
    "people": "person",
    "companies": "company",
}
_DESC = frozenset(
    [
        "top",
        "highest",
        "largest",
        "biggest",
        "most",
        "best",
        "greatest",
        "latest",
        "newest",
        "recent",
        "maximum",
        "max",
    ]
)
_ASC = frozenset(
    ["lowest", "smallest", "least", "fewest", "oldest", "earliest", "bottom", "minimum", "min"]
)
_RECENCY = frozenset(["latest", "newest", "recent", "oldest", "earliest"])
_GRAINS = {
    "day": TimeGrain.DAY,
    "daily": TimeGrain.DAY,
    "week": TimeGrain.WEEK,
    "weekly": TimeGrain.WEEK,
    "month": TimeGrain.MONTH,
    "monthly": TimeGrain.MONTH,
    "quarter": TimeGrain.QUARTER,
    "quarterly": TimeGrain.QUARTER,
    "year": TimeGrain.YEAR,
    "yearly": TimeGrain.YEAR,
    "annual": TimeGrain.YEAR,
}
_OPEN_WORDS = frozenset({"open", "ongoing", "pending"})
_RANGE_OPS = frozenset(
    {
        FilterOp.GREATER,
        FilterOp.LESS,
        FilterOp.GREATER_OR_EQUAL,
        FilterOp.LESS_OR_EQUAL,
        FilterOp.IN_RANGE,
    }
)
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_ORDINAL_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_WORD = re.compile(r"[a-z0-9]+")


def norm(word: str) -> str:
    """The folded form used for every comparison."""
    return _IRREGULAR.get(word, stem(word))


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(norm(m.group()), m.start(), m.end()) for m in _WORD.finditer(text.lower())]


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(norm(w) for w in _WORD.findall(text.lower()))


# --- the lexicon ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """One thing a phrase can mean: a table, a column, or a stored value of a column."""

    kind: str  # "table" | "column" | "value"
    table: TableInfo
    column: ColumnInfo | None = None
    value: str = ""
    weak: bool = False  # one word of a longer column name ("lost" of lost_reason)


@dataclass(frozen=True)
class _Mention:
    entry: _Entry
    start: int  # token index
    end: int
    exact: bool = True


_PARENS = re.compile(r"\(([^)]*)\)")


def _synonyms(comment: str) -> list[str]:
    """Comma-separated words in a comment's first parentheses: the house convention for
    what else people call a table or column."""
    match = _PARENS.search(comment)
    return [s.strip() for s in match.group(1).split(",") if s.strip()] if match else []


def _is_key(table: TableInfo, column: ColumnInfo) -> bool:
    return column.name in table.primary_key or any(
        column.name in fk.columns for fk in table.foreign_keys
    )


class _Lexicon:
    """Phrases of one catalog, longest first."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        phrases: dict[tuple[str, ...], list[_Entry]] = {}

        def add(words: tuple[str, ...], entry: _Entry) -> None:
            words = tuple(w for w in words if w)
            if words and not (len(words) == 1 and words[0] in _STOP):
                bucket = phrases.setdefault(words, [])
                if entry not in bucket:
                    bucket.append(entry)

        for table in catalog.tables:
            add(_phrase(table.name.replace("_", " ")), _Entry("table", table))
            for synonym in _synonyms(table.comment):
                add(_phrase(synonym), _Entry("table", table))
        table_words = {w for words in phrases for w in words}
        for table in catalog.tables:
            for column in table.columns:
                entry = _Entry("column", table, column)
                if not _is_key(table, column):
                    words = _phrase(column.name.replace("_", " "))
                    add(words, entry)
                    for word in words:
                        if len(word) > 3 and word not in table_words | {"date", "name", "count"}:
                            add((word,), replace(entry, weak=len(words) > 1))
                    if column.name == "name":
                        add(("name",), entry)
                for synonym in _synonyms(column.comment):
                    add(_phrase(synonym), entry)
                for value in column.sample_values:
                    if "@" in value or "://" in value:
                        continue  # addresses are not words anyone asks with
                    add(_phrase(value), _Entry("value", table, column, value))
        self.phrases = phrases
        self.max_len = max((len(p) for p in phrases), default=1)
        # Single words that occur inside multi-word values: "won" in "Closed Won".
        self.value_words: dict[str, list[_Entry]] = {}
        for words, entries in phrases.items():
            for entry in entries:
                if entry.kind == "value" and len(words) > 1:
                    for word in words:
                        if word not in _STOP and len(word) > 2:
                            self.value_words.setdefault(word, []).append(entry)

    def scan(self, words: Sequence[str], consumed: set[int]) -> list[_Mention]:
        """Longest-match phrases over the unconsumed words, left to right."""
        found: list[_Mention] = []
        index = 0
        while index < len(words):
            if index in consumed:
                index += 1
                continue
            matched = False
            for length in range(min(self.max_len, len(words) - index), 0, -1):
                span = range(index, index + length)
                if any(i in consumed for i in span):
                    continue
                entries = self.phrases.get(tuple(words[index : index + length]))
                if entries:
                    for entry in entries:
                        found.append(_Mention(entry, index, index + length))
                    index += length
                    matched = True
                    break
            if not matched:
                index += 1
        return found


# --- reading a question ----------------------------------------------------------------


@dataclass
class _Reading:
    """What the rules made of a question."""

    subject: TableInfo | None = None
    kind: IntentKind | None = None
    ratio: bool = False
    intent: Intent | None = None
    numerator: tuple[Filter, ...] = ()
    interpretation: str = ""
    reason: str = ""
    tables: list[str] = field(default_factory=list)
    # A statement composed by the schema linker (services.sql._linker), when it read the
    # question; the definitions it applied and those it could not use.
    sql: str = ""
    applied: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


@dataclass
class _Spans:
    """Character spans of the question already explained (dates, numbers, names)."""

    spans: list[tuple[int, int]] = field(default_factory=list)

    def add(self, start: int, end: int) -> None:
        self.spans.append((start, end))

    def covers(self, start: int, end: int) -> bool:
        return any(s < end and start < e for s, e in self.spans)


@dataclass(frozen=True)
class _DateRange:
    start: date
    end: date
    at: int  # character offset


@dataclass(frozen=True)
class _Comparison:
    op: FilterOp
    values: tuple[Decimal, ...]
    at: int
    money: bool


def _quarter_start(day: date) -> date:
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bq([1-4])\s*(?:of\s+)?(\d{4})\b"), "quarter"),
    (
        re.compile(r"\b(?:the\s+)?(first|second|third|fourth)\s+quarter\s+(?:of\s+)?(\d{4})\b"),
        "ordinal_quarter",
    ),
    (re.compile(r"\b(this|current|last|previous|past|next)\s+(week|month|quarter|year)\b"), "rel"),
    (
        re.compile(
            r"\b(?:in\s+the\s+|over\s+the\s+|during\s+the\s+)?(?:last|past)\s+(\d+)\s+"
            r"(days?|weeks?|months?|years?)\b"
        ),
        "last_n",
    ),
    (re.compile(r"\b(year\s+to\s+date|ytd)\b"), "ytd"),
    (re.compile(r"\bsince\s+(?:([a-z]+)\s+)?(\d{4})\b"), "since"),
    (re.compile(r"\bbefore\s+(\d{4})\b"), "before"),
    (re.compile(r"\bafter\s+(\d{4})\b"), "after"),
    (re.compile(r"\b([a-z]+)\s+(?:of\s+)?(\d{4})\b"), "month_year"),
    (re.compile(r"\b(?:in|during|for|of|throughout)\s+(\d{4})\b"), "year"),
]


def _dates(text: str, today: date, spans: _Spans) -> list[_DateRange]:
    found: list[_DateRange] = []
    for pattern, form in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if spans.covers(match.start(), match.end()):
                continue
            window = _date_window(form, match, today)
            if window is None:
                continue
            spans.add(match.start(), match.end())
            found.append(_DateRange(window[0], window[1], match.start()))
    return sorted(found, key=lambda d: d.at)


def _date_window(form: str, match: re.Match[str], today: date) -> tuple[date, date] | None:
    groups = match.groups()
    tomorrow = today + timedelta(days=1)
    if form in ("quarter", "ordinal_quarter"):
        quarter = int(groups[0]) if form == "quarter" else _ORDINAL_QUARTERS[groups[0]]
        start = date(int(groups[1]), 3 * quarter - 2, 1)
        return start, _add_months(start, 3)
    if form == "rel":
        which, unit = groups
        shift = {"this": 0, "current": 0, "last": -1, "previous": -1, "past": -1, "next": 1}[which]
        if unit == "week":
            start_week = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
            return start_week, start_week + timedelta(weeks=1)
        if unit == "month":
            start = _add_months(date(today.year, today.month, 1), shift)
            return start, _add_months(start, 1)
        if unit == "quarter":
            start = _add_months(_quarter_start(today), 3 * shift)
            return start, _add_months(start, 3)
        return date(today.year + shift, 1, 1), date(today.year + shift + 1, 1, 1)
    if form == "last_n":
        count, unit = int(groups[0]), groups[1].rstrip("s")
        days = {"day": 1, "week": 7}.get(unit)
        if days is not None:
            return today - timedelta(days=count * days), tomorrow
        months = count * (12 if unit == "year" else 1)
        return _add_months(date(today.year, today.month, 1), -months).replace(
            day=min(today.day, 28)
        ), tomorrow
    if form == "ytd":
        return date(today.year, 1, 1), tomorrow
    if form == "since":
        month = _MONTHS.get(groups[0] or "", 1)
        return date(int(groups[1]), month, 1), tomorrow
    if form == "before":
        return date(1900, 1, 1), date(int(groups[0]), 1, 1)
    if form == "after":
        return date(int(groups[0]) + 1, 1, 1), date(9999, 1, 1)
    if form == "month_year":
        named = _MONTHS.get(groups[0])
        if named is None:
            return None
        start = date(int(groups[1]), named, 1)
        return start, _add_months(start, 1)
    year = int(groups[0])
    if not 1900 <= year <= 2200:
        return None
    return date(year, 1, 1), date(year + 1, 1, 1)


_NUMBER = r"\$?\s*(\d[\d,]*(?:\.\d+)?)\s*(k|m|million|thousand|bn|billion)?\b"
_COMPARISONS: list[tuple[re.Pattern[str], FilterOp | None]] = [
    (re.compile(rf"\bbetween\s+{_NUMBER}\s+and\s+{_NUMBER}"), None),
    (
        re.compile(
            rf"\b(?:more than|greater than|over|above|exceeding|bigger than|larger than)"
            rf"\s+{_NUMBER}"
        ),
        FilterOp.GREATER,
    ),
    (re.compile(rf"\b(?:at least|no less than|minimum of)\s+{_NUMBER}"), FilterOp.GREATER_OR_EQUAL),
    (
        re.compile(rf"\b(?:less than|fewer than|under|below|smaller than)\s+{_NUMBER}"),
        FilterOp.LESS,
    ),
    (re.compile(rf"\b(?:at most|no more than|maximum of)\s+{_NUMBER}"), FilterOp.LESS_OR_EQUAL),
]
_MULTIPLIERS = {
    "k": 1000,
    "thousand": 1000,
    "m": 1_000_000,
    "million": 1_000_000,
    "bn": 1_000_000_000,
    "billion": 1_000_000_000,
}


def _amount(digits: str, suffix: str | None) -> Decimal:
    return Decimal(digits.replace(",", "")) * _MULTIPLIERS.get(suffix or "", 1)


def _comparisons(text: str, spans: _Spans) -> list[_Comparison]:
    found = []
    for pattern, op in _COMPARISONS:
        for match in pattern.finditer(text):
            if spans.covers(match.start(), match.end()):
                continue
            spans.add(match.start(), match.end())
            money = "$" in match.group() or "dollar" in text[match.end() : match.end() + 10]
            groups = match.groups()
            if op is None:
                low, high = _amount(groups[0], groups[1]), _amount(groups[2], groups[3])
                found.append(_Comparison(FilterOp.IN_RANGE, (low, high), match.start(), money))
            else:
                found.append(
                    _Comparison(op, (_amount(groups[0], groups[1]),), match.start(), money)
                )
    return found


_LIMIT_PATTERNS = [
    re.compile(r"\btop\s+(\d{1,3})\b"),
    re.compile(
        r"\b(\d{1,3})\s+(?:most|least|largest|biggest|highest|best|latest|newest|oldest|"
        r"smallest|lowest|recent|top|fewest)\b"
    ),
    re.compile(r"\b(?:which|what|list|show|name|the|first|give me)\s+(\d{1,3})\b"),
]


def _limit(text: str, spans: _Spans) -> int:
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match and not spans.covers(match.start(1), match.end(1)):
            spans.add(match.start(1), match.end(1))
            return int(match.group(1))
    return 0


_NAME_RUN = re.compile(r"(?:\b[A-Z][\w&'.-]*(?:\s+(?:of|and|&|de)\s+|\s+)?)+")
_QUOTED = re.compile(r"[\"“']([^\"”']{2,80})[\"”']")
_QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "how",
        "list",
        "show",
        "give",
        "find",
        "count",
        "tell",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "top",
        "total",
        "average",
        "the",
        "a",
        "an",
        "in",
        "for",
    ]
)


def _names(question: str, spans: _Spans, known: set[str]) -> list[tuple[str, int]]:
    """Proper names the schema does not know: quoted text, then runs of capitals."""
    found: list[tuple[str, int]] = []
    for match in _QUOTED.finditer(question):
        if not spans.covers(match.start(), match.end()):
            spans.add(match.start(), match.end())
            found.append((match.group(1).strip(), match.start()))
    for match in _NAME_RUN.finditer(question):
        words = match.group().split()
        start = match.start()
        while words and (
            words[0].lower() in _QUESTION_WORDS or norm(words[0].lower().strip(".,?")) in known
        ):
            start = question.index(words[0], start) + len(words[0])
            words = words[1:]
        while words and (
            words[-1].lower() in ("of", "and", "&", "de")
            or norm(words[-1].lower().strip(".,?")) in known
        ):
            words = words[:-1]
        name = " ".join(w.strip(".,?!") for w in words)
        if len(name) < 2 or any(ch.isdigit() for ch in name[:2]):
            continue
        if len(words) == 1 and not question[:start].strip():
            continue  # a capital that only starts the sentence
        at = question.find(name, start)
        if at < 0 or spans.covers(at, at + len(name)):
            continue
        if all(norm(w.lower()) in known for w in _WORD.findall(name.lower())):
            continue
        spans.add(at, at + len(name))
        found.append((name, at))
    return found


class _Reader:
    """Reads one question against one catalog."""

    def __init__(self, question: str, schema: SchemaView, lexicon: _Lexicon) -> None:
        self.question = question
        self.text = question.lower()
        self.catalog = schema.catalog
        self.today = schema.today
        self.lexicon = lexicon
        self.spans = _Spans()
        self.dates = _dates(self.text, self.today, self.spans)
        self.comparisons = _comparisons(self.text, self.spans)
        self.limit = _limit(self.text, self.spans)
        known = {w for phrase in lexicon.phrases for w in phrase}
        known |= set(_MONTHS) | {"q1", "q2", "q3", "q4"}
        self.names = _names(question, self.spans, known)
        self.tokens = _tokens(question)
        self.words = [t[0] for t in self.tokens]
        consumed = {
            i for i, (_, start, end) in enumerate(self.tokens) if self.spans.covers(start, end)
        }
        self.mentions = lexicon.scan(self.words, consumed)
        self.used = consumed | {i for m in self.mentions for i in range(m.start, m.end)}

    # --- helpers ---------------------------------------------------------------------

    def _has(self, *phrases: str) -> bool:
        return any(re.search(rf"\b{re.escape(p)}\b", self.text) for p in phrases)

    def _first(self, kind: str) -> list[_Mention]:
        return [m for m in self.mentions if m.entry.kind == kind]

    def _reachable(self, table: TableInfo, other: TableInfo) -> bool:
        try:
            compile_intent(
                Intent(IntentKind.COUNT, table.qualified, join_tables=(other.qualified,)),
                self.catalog,
                row_cap=1,
            )
        except IntentError:
            return False
        return True

    def _display_columns(self, table: TableInfo) -> list[ColumnInfo]:
        for wanted in ("name", "full_name"):
            column = table.column(wanted)
            if column is not None:
                return [column]
        named = [c for c in table.columns if c.name.endswith("_name")]
        if named:
            return named
        for wanted in ("subject", "title"):
            column = table.column(wanted)
            if column is not None:
                return [column]
        return [c for c in table.columns if c.name in table.primary_key] or list(table.columns[:1])

    def _measures(self, tables: Iterable[TableInfo]) -> list[tuple[TableInfo, ColumnInfo]]:
        return [
            (t, c)
            for t in tables
            for c in t.columns
            if type_class(c.data_type) == "numeric" and not _is_key(t, c)
        ]

    def _subject_measure(self, table: TableInfo) -> tuple[TableInfo, ColumnInfo] | None:
        column = self._default_measure(table)
        return None if column is None else (table, column)

    def _default_measure(self, table: TableInfo) -> ColumnInfo | None:
        measures = [c for _, c in self._measures([table])]
        for column in measures:
            if "dollar" in column.comment.lower():
                return column
        return measures[0] if measures else None

    def _date_column(
        self, tables: Sequence[TableInfo], near: int
    ) -> tuple[TableInfo, ColumnInfo] | None:
        """The date column a time range applies to: the one whose words the question
        uses, preferring the subject and plain dates; else the subject's first date."""
        cue_words = set(self.words)
        if {"won", "lost", "win"} & cue_words:
            cue_words.add("close")
        best: tuple[float, TableInfo, ColumnInfo] | None = None
        for rank, table in enumerate(tables):
            for column in table.columns:
                klass = type_class(column.data_type)
                if klass not in ("date", "timestamp"):
                    continue
                names = _phrase(column.name.replace("_", " ")) + _phrase(column.comment)[:6]
                overlap = sum(
                    1
                    for w in cue_words
                    for n in names
                    if len(w) > 3 and len(n) > 3 and (w.startswith(n) or n.startswith(w))
                )
                score = overlap * 10 - rank * 3 + (1 if klass == "date" else 0)
                if overlap and (best is None or score > best[0]):
                    best = (score, table, column)
        if best is not None:
            return best[1], best[2]
        for table in tables[:1]:
            for klass in ("date", "timestamp"):
                for column in table.columns:
                    if type_class(column.data_type) == klass and not column.nullable:
                        return table, column
        return None

    def _column_ref(self, table: TableInfo, column: ColumnInfo, subject: TableInfo) -> str:
        return (
            column.name if table.qualified == subject.qualified else f"{table.name}.{column.name}"
        )

    # --- the reading -------------------------------------------------------------------

    def read(self) -> _Reading:
        reading = _Reading()
        tables = self._first("table")
        columns = self._first("column")
        values = self._first("value")
        subject = self._subject(tables, columns, values)
        if subject is None:
            reading.reason = "no table of this database matches the question"
            return reading
        reading.subject = subject
        involved: dict[str, TableInfo] = {subject.qualified: subject}

        def involve(table: TableInfo) -> bool:
            if table.qualified in involved:
                return True
            if not self._reachable(subject, table):
                return False
            involved[table.qualified] = table
            return True

        filters: list[Filter] = []
        value_filters: list[tuple[int, Filter]] = []
        # exact value mentions; several candidate columns: prefer the subject's, then 'name'
        for mention in self._resolve_values(values, subject):
            entry = mention.entry
            assert entry.column is not None
            if not involve(entry.table):
                continue
            ref = self._column_ref(entry.table, entry.column, subject)
            value_filters.append(
                (mention.start, Filter(ref, FilterOp.EQUAL, (Value.text(entry.value),)))
            )
        # words inside multi-word values ("won" -> Closed Won), in the tables the
        # question names; words of a named table's own title ("sales" reps) are not values
        named_tables = {subject.qualified} | {
            m.entry.table.qualified for m in self.mentions if m.entry.kind in ("table", "column")
        }
        title_words = {
            w
            for m in self.mentions
            if m.entry.kind == "table"
            for w in _phrase(_PARENS.split(m.entry.table.comment)[0])
        }
        weak_only = {
            i
            for i in self.used
            if (at := [m for m in self.mentions if m.start <= i < m.end])
            and all(m.entry.weak for m in at)
        }
        for index, word in enumerate(self.words):
            if (index in self.used and index not in weak_only) or word in title_words:
                continue
            if word in _OPEN_WORDS:
                # "open" negates the closed states: of the subject, else of a table the
                # question names ("accounts by open pipeline" means open deals)
                every = self.lexicon.value_words.get("closed", [])
                closed = [e for e in every if e.table.qualified == subject.qualified] or [
                    e for e in every if e.table.qualified in named_tables
                ]
                if closed and involve(closed[0].table):
                    column = closed[0].column
                    assert column is not None
                    vals = tuple(
                        Value.text(e.value)
                        for e in closed
                        if e.column == column and e.table == closed[0].table
                    )
                    ref = self._column_ref(closed[0].table, column, subject)
                    value_filters.append((index, Filter(ref, FilterOp.NOT_IN, vals)))
                    self.used.add(index)
                continue
            candidates = [
                e
                for e in self.lexicon.value_words.get(word, [])
                if e.table.qualified in named_tables
            ]
            by_column: dict[tuple[str, str], list[_Entry]] = {}
            for entry in candidates:
                assert entry.column is not None
                by_column.setdefault((entry.table.qualified, entry.column.name), []).append(entry)
            if len(by_column) == 1:
                entries = next(iter(by_column.values()))
                first = entries[0]
                assert first.column is not None
                if not involve(first.table):
                    continue
                vals = tuple(Value.text(e.value) for e in entries)
                op = FilterOp.EQUAL if len(vals) == 1 else FilterOp.IN
                ref = self._column_ref(first.table, first.column, subject)
                value_filters.append((index, Filter(ref, op, vals)))
                self.used.add(index)
                if index in weak_only:
                    self.mentions = [m for m in self.mentions if not m.start <= index < m.end]
        merged = _merge_equal(value_filters)
        filters += [f for _, f in merged]

        group_keys = [k for k in self._group_keys(subject) if involve(k[0])]
        measure = self._measure(subject, columns, involve)
        # booleans and "archived"-style null checks, on the subject
        filters += self._flag_filters(subject, columns, filters, group_keys)
        # numbers
        for comparison in self.comparisons:
            target = self._comparison_column(subject, comparison, columns)
            if target is None:
                continue
            table, column = target
            if not involve(table):
                continue
            filters.append(
                Filter(
                    self._column_ref(table, column, subject),
                    comparison.op,
                    tuple(Value.decimal(v) for v in comparison.values),
                )
            )
        # dates
        for window in self.dates:
            date_tables = [subject] + [t for t in involved.values() if t is not subject]
            found = self._date_column(date_tables, window.at)
            if found is None:
                continue
            table, column = found
            if not involve(table):
                continue
            filters.append(
                Filter(
                    self._column_ref(table, column, subject),
                    FilterOp.IN_RANGE,
                    (Value.date(window.start), Value.date(window.end)),
                )
            )
        # names the schema does not know
        for name, _ in self.names:
            target = self._name_column(subject)
            if target is None:
                continue
            table, column = target
            if not involve(table):
                continue
            filters.append(
                Filter(
                    self._column_ref(table, column, subject), FilterOp.CONTAINS, (Value.text(name),)
                )
            )

        joins = tuple(q for q in involved if q != subject.qualified)
        reading.tables = list(involved)
        if self._is_ratio():
            reading.ratio = True
            reading.kind = IntentKind.COUNT
            base, numerator = self._split_ratio(merged, filters, subject)
            reading.intent = Intent(IntentKind.COUNT, subject.qualified, joins, filters=tuple(base))
            reading.numerator = tuple(numerator)
            return reading
        reading.intent = self._shape(
            subject, joins=joins, filters=filters, group_keys=group_keys, measure=measure
        )
        reading.tables = list(involved)
        return reading

    def _subject(
        self, tables: list[_Mention], columns: list[_Mention], values: list[_Mention]
    ) -> TableInfo | None:
        """The table whose rows the question counts, lists or ranks: the first table
        named outside a grouping phrase, else the owner of a named column or value."""
        for mention in tables:
            if not self._is_group_position(mention.start):
                return mention.entry.table
        for mention in columns:
            if not self._is_group_position(mention.start):
                return mention.entry.table
        if tables:
            return tables[0].entry.table
        # only values: the fact table among their owners (the one with most rows), so
        # "win rate in EMEA" is about deals, not regions
        owners = {m.entry.table.qualified: m.entry.table for m in values}
        for index, word in enumerate(self.words):
            if index in self.used:
                continue
            found = {e.table.qualified: e.table for e in self.lexicon.value_words.get(word, [])}
            if len(found) == 1:
                owners.update(found)
        if owners:
            return max(owners.values(), key=lambda t: t.row_estimate)
        return None

    def _is_group_position(self, index: int) -> bool:
        window = self.words[max(index - 2, 0) : index]
        return bool({"by", "per", "each"} & set(window))

    def _resolve_values(self, values: list[_Mention], subject: TableInfo) -> list[_Mention]:
        by_span: dict[tuple[int, int], list[_Mention]] = {}
        for mention in values:
            by_span.setdefault((mention.start, mention.end), []).append(mention)
        chosen: list[_Mention] = []
        for group in by_span.values():
            own = [m for m in group if m.entry.table.qualified == subject.qualified]
            pool = own or group
            named = [m for m in pool if m.entry.column and m.entry.column.name == "name"]
            chosen.append((named or pool)[0])
        return chosen

    def _group_keys(self, subject: TableInfo) -> list[tuple[TableInfo, ColumnInfo, TimeGrain]]:
        keys: list[tuple[TableInfo, ColumnInfo, TimeGrain]] = []
        for index, word in enumerate(self.words):
            if word not in ("by", "per", "each", "across"):
                continue
            following = self.words[index + 1 : index + 4]
            longer = any(m.start == index + 1 and m.end - m.start > 1 for m in self.mentions)
            if following and following[0] in _GRAINS and not longer:
                found = self._date_column([subject], index)
                if found is not None:
                    keys.append((found[0], found[1], _GRAINS[following[0]]))
                    self.used.add(index + 1)
                continue
            mentions = [m for m in self.mentions if index < m.start <= index + 3]
            if not mentions:
                continue
            # several meanings at one place: the subject's own column first
            at_first = [m for m in mentions if m.start == mentions[0].start]
            first = next(
                (m for m in at_first if m.entry.table.qualified == subject.qualified), at_first[0]
            )
            if first.entry.kind == "value":
                continue
            entry = first.entry
            if entry.kind == "column" and entry.column is not None:
                if type_class(entry.column.data_type) == "numeric" and self._rank_direction():
                    continue  # "top 5 by amount" orders, it does not group
                keys.append((entry.table, entry.column, TimeGrain.NONE))
                continue
            # a table: its column named next ("product category"), else its display name
            nxt = [
                m
                for m in mentions[1:]
                if m.entry.kind == "column"
                and m.entry.table == entry.table
                and m.start == first.end
            ]
            if nxt and nxt[0].entry.column is not None:
                keys.append((entry.table, nxt[0].entry.column, TimeGrain.NONE))
            else:
                for column in self._display_columns(entry.table)[:1]:
                    keys.append((entry.table, column, TimeGrain.NONE))
        seen: set[tuple[str, str]] = set()
        unique = []
        for key in keys:
            marker = (key[0].qualified, key[1].name)
            if marker not in seen:
                seen.add(marker)
                unique.append(key)
        return unique

    def _rank_direction(self) -> bool | None:
        """True for descending cues, False for ascending, None when no ranking is asked."""
        # words inside a parsed number or date ("at least 95") are not ranking cues
        words = {
            m.group()
            for m in _WORD.finditer(self.text)
            if not self.spans.covers(m.start(), m.end())
        }
        if words & _ASC:
            return False
        if words & _DESC or self.limit:
            return True
        return None

    def _measure(
        self, subject: TableInfo, columns: list[_Mention], involve: object
    ) -> tuple[TableInfo, ColumnInfo] | None:
        numeric = [
            m
            for m in columns
            if m.entry.column is not None
            and type_class(m.entry.column.data_type) == "numeric"
            and not _is_key(m.entry.table, m.entry.column)
        ]
        for mention in numeric:
            if mention.entry.table.qualified == subject.qualified:
                assert mention.entry.column is not None
                return mention.entry.table, mention.entry.column
        if numeric:
            entry = numeric[0].entry
            assert entry.column is not None
            return entry.table, entry.column
        return None

    def _flag_filters(
        self,
        subject: TableInfo,
        columns: list[_Mention],
        existing: list[Filter],
        group_keys: list[tuple[TableInfo, ColumnInfo, TimeGrain]],
    ) -> list[Filter]:
        found: list[Filter] = []
        filtered = {f.column for f in existing}
        for mention in columns:
            entry = mention.entry
            column = entry.column
            if column is None or entry.table.qualified != subject.qualified:
                continue
            if column.name in filtered or any(k[1].name == column.name for k in group_keys):
                continue
            if column.data_type == "boolean":
                negated = mention.start > 0 and self.words[mention.start - 1] in (
                    "not",
                    "non",
                    "no",
                )
                found.append(Filter(column.name, FilterOp.EQUAL, (Value.boolean(not negated),)))
                filtered.add(column.name)
        # "archived", "discontinued": a column whose comment names the state
        for index, word in enumerate(self.words):
            if index in self.used or word in _STOP or len(word) < 5:
                continue
            for column in subject.columns:
                if column.data_type != "boolean" or column.name in filtered:
                    continue
                comment = column.comment.lower()
                state = re.search(
                    rf"\b(true|false) (?:when|for|if) [a-z ]*\b{re.escape(word)}", comment
                )
                if state:
                    found.append(
                        Filter(
                            column.name, FilterOp.EQUAL, (Value.boolean(state.group(1) == "true"),)
                        )
                    )
                    filtered.add(column.name)
                    self.used.add(index)
                    break
            if index in self.used:
                continue
            for column in subject.columns:
                if not column.nullable or column.name in filtered:
                    continue
                comment = column.comment.lower()
                comment_words = {norm(w) for w in _WORD.findall(comment)}
                if word not in comment_words:
                    continue
                null_for = re.search(rf"null (?:for|while) [a-z ]*{re.escape(word)}", comment)
                op = FilterOp.IS_NULL if null_for else FilterOp.IS_NOT_NULL
                found.append(Filter(column.name, op))
                filtered.add(column.name)
                self.used.add(index)
                break
        return found

    def _comparison_column(
        self, subject: TableInfo, comparison: _Comparison, columns: list[_Mention]
    ) -> tuple[TableInfo, ColumnInfo] | None:
        numeric = [
            m
            for m in columns
            if m.entry.column is not None and type_class(m.entry.column.data_type) == "numeric"
        ]
        if numeric:

            def distance(m: _Mention) -> int:
                return abs(self.tokens[m.start][1] - comparison.at)

            best = min(numeric, key=distance)
            assert best.entry.column is not None
            return best.entry.table, best.entry.column
        column = self._default_measure(subject)
        return (subject, column) if column is not None else None

    def _name_column(self, subject: TableInfo) -> tuple[TableInfo, ColumnInfo] | None:
        """The free-text name a proper noun is matched against: the subject's own name
        column, else the nearest parent's (foreign keys in order)."""
        own = subject.column("name")
        if own is not None and not own.sample_values:
            return subject, own
        for fk in subject.foreign_keys:
            parent = self.catalog.table(fk.referenced_table)
            if parent is None:
                continue
            column = parent.column("name")
            if column is not None and not column.sample_values:
                return parent, column
        for other in self.catalog.tables:
            for fk in other.foreign_keys:
                if fk.referenced_table == subject.qualified:
                    column = other.column("name")
                    if column is not None and not column.sample_values:
                        return other, column
        return None

    def _is_ratio(self) -> bool:
        return self._has(
            "percentage", "percent", "share", "proportion", "ratio", "fraction"
        ) or bool(re.search(r"\b\w+ rate\b", self.text))

    def _split_ratio(
        self, merged: list[tuple[int, Filter]], filters: list[Filter], subject: TableInfo
    ) -> tuple[list[Filter], list[Filter]]:
        """Which filters define the population and which the part asked about: for
        "<word> rate" the value that word names; otherwise the values named after the
        population ("what share of deals came from partners")."""
        rate = re.search(r"\b(\w+) rate\b", self.text)
        if rate is not None:
            word = norm(rate.group(1))
            numerator = [f for position, f in merged if self.words[position] == word]
        else:
            subject_at = next(
                (
                    m.start
                    for m in self.mentions
                    if m.entry.kind == "table" and m.entry.table == subject
                ),
                -1,
            )
            numerator = [f for position, f in merged if position > subject_at]
        if not numerator and merged:
            numerator = [merged[-1][1]]
        chosen = {id(f) for f in numerator}
        base = [f for f in filters if id(f) not in chosen]
        # "win rate": the population is the value's siblings (Closed Won -> Closed ...)
        for spec in numerator:
            siblings = self._siblings(subject, spec)
            if siblings is not None:
                base.append(siblings)
        return base, numerator

    def _siblings(self, subject: TableInfo, spec: Filter) -> Filter | None:
        column = subject.column(spec.column)
        if column is None or len(spec.values) != 1:
            return None
        value = str(spec.values[0].value)
        head = value.split(maxsplit=1)[0] if " " in value else ""
        if not head:
            return None
        kin = [v for v in column.sample_values if v.split(maxsplit=1)[0] == head]
        if len(kin) < 2:
            return None
        return Filter(spec.column, FilterOp.IN, tuple(Value.text(v) for v in kin))

    def _shape(
        self,
        subject: TableInfo,
        *,
        joins: tuple[str, ...],
        filters: list[Filter],
        group_keys: list[tuple[TableInfo, ColumnInfo, TimeGrain]],
        measure: tuple[TableInfo, ColumnInfo] | None,
    ) -> Intent:
        direction = self._rank_direction()
        aggregate = self._aggregate_cue()
        counting = self._has("how many", "number of", "count")

        def ref(table: TableInfo, column: ColumnInfo) -> str:
            return self._column_ref(table, column, subject)

        if group_keys:
            function = aggregate or Aggregate.COUNT
            agg_column = ""
            if function is not Aggregate.COUNT:
                target = measure or self._subject_measure(subject)
                if target is None:
                    function = Aggregate.COUNT
                else:
                    agg_column = ref(*target)
            orders: tuple[Order, ...] = ()
            limit = 0
            if direction is not None and (
                self.limit or self._has("most", "least", "top", "highest", "lowest", "fewest")
            ):
                orders = (Order(by_aggregate=True, descending=direction),)
                limit = self.limit or (1 if not self._plural_after_which() else 0)
            return Intent(
                IntentKind.GROUP_BY,
                subject.qualified,
                joins,
                filters=tuple(filters),
                group_by=tuple(Group(ref(t, c), g) for t, c, g in group_keys),
                order_by=orders,
                limit=limit,
                aggregate=function,
                aggregate_column=agg_column,
            )
        if counting and aggregate in (None, Aggregate.COUNT):
            return Intent(IntentKind.COUNT, subject.qualified, joins, filters=tuple(filters))
        if aggregate in (Aggregate.SUM, Aggregate.AVG) or (
            aggregate in (Aggregate.MAX, Aggregate.MIN) and self._asks_for_value(measure)
        ):
            target = measure or self._subject_measure(subject)
            if target is not None:
                return Intent(
                    IntentKind.AGGREGATE,
                    subject.qualified,
                    joins,
                    filters=tuple(filters),
                    aggregate=aggregate or Aggregate.SUM,
                    aggregate_column=ref(*target),
                )
        display = self._display_columns(subject)
        if direction is not None:
            per_value = self._which_column_most(subject, joins, filters, direction)
            if per_value is not None:
                return per_value
            ranked = self._ranked_group(subject, joins, filters, measure, direction)
            if ranked is not None:
                return ranked
            order_target = self._order_target(subject, measure)
            if order_target is not None:
                limit = self.limit or (0 if self._plural_subject(subject) else 1)
                columns = [ref(subject, c) for c in display]
                order_ref = ref(*order_target)
                if order_ref not in columns:
                    columns.append(order_ref)
                return Intent(
                    IntentKind.TOP_N,
                    subject.qualified,
                    joins,
                    columns=tuple(columns),
                    filters=tuple(filters),
                    order_by=(Order(order_ref, descending=direction),),
                    limit=limit,
                )
        columns = [ref(subject, c) for c in display]
        for mention in self._first("column"):
            entry = mention.entry
            if entry.column is None or entry.table.qualified not in (subject.qualified, *joins):
                continue
            name = ref(entry.table, entry.column)
            if name not in columns and name not in {f.column for f in filters}:
                columns.append(name)
        for spec in filters:
            if spec.op in _RANGE_OPS and spec.column not in columns:
                columns.append(spec.column)
        kind = IntentKind.LOOKUP if self.names and filters else IntentKind.LIST
        return Intent(
            kind,
            subject.qualified,
            joins,
            columns=tuple(columns),
            filters=tuple(filters),
            limit=self.limit,
        )

    def _aggregate_cue(self) -> Aggregate | None:
        if self._has("total number"):
            return Aggregate.COUNT
        if self._has("average", "avg", "mean"):
            return Aggregate.AVG
        if self._has("number of", "how many", "count"):
            return Aggregate.COUNT
        if self._has("total", "sum", "combined", "overall value"):
            return Aggregate.SUM
        if self._has("maximum", "max", "largest", "biggest", "highest"):
            return Aggregate.MAX
        if self._has("minimum", "min", "smallest", "lowest"):
            return Aggregate.MIN
        return None

    def _asks_for_value(self, measure: tuple[TableInfo, ColumnInfo] | None) -> bool:
        """ "What is the largest deal amount?" asks for a value, not for rows."""
        return (
            measure is not None
            and not self.limit
            and bool(re.search(r"\b(?:what|how)\b.*\b(?:is|was|are)\b", self.text))
        )

    def _plural_subject(self, subject: TableInfo) -> bool:
        for mention in self.mentions:
            if mention.entry.kind == "table" and mention.entry.table == subject:
                original = _WORD.findall(self.text)
                raw = original[mention.start] if mention.start < len(original) else ""
                return raw != norm(raw)
        return True

    def _plural_after_which(self) -> bool:
        match = re.search(r"\b(?:which|what)\s+(\w+)", self.text)
        return match is not None and match.group(1) != norm(match.group(1))

    def _order_target(
        self, subject: TableInfo, measure: tuple[TableInfo, ColumnInfo] | None
    ) -> tuple[TableInfo, ColumnInfo] | None:
        if set(_WORD.findall(self.text)) & _RECENCY:
            found = self._date_column([subject], 0)
            if found is not None:
                return found
        if measure is not None:
            return measure
        column = self._default_measure(subject)
        return (subject, column) if column is not None else None

    def _which_column_most(
        self,
        subject: TableInfo,
        joins: tuple[str, ...],
        filters: list[Filter],
        direction: bool,
    ) -> Intent | None:
        """ "Which 5 industries have the most companies?": group the counted table by the
        column the question asks "which" about."""
        asked = re.search(r"\b(?:which|what)\s+(?:\d+\s+)?(\w+)", self.text)
        if asked is None:
            return None
        position = next((i for i, t in enumerate(self.tokens) if t[1] == asked.start(1)), -1)
        column_mention = next(
            (
                m
                for m in self.mentions
                if m.start == position and m.entry.kind == "column" and m.entry.column is not None
            ),
            None,
        )
        if column_mention is None or column_mention.entry.column is None:
            return None
        if type_class(column_mention.entry.column.data_type) == "numeric":
            return None
        counted = next(
            (
                m.entry.table
                for m in self.mentions
                if m.entry.kind == "table"
                and m.start > position
                and {"most", "fewest", "least"} & set(self.words[max(m.start - 2, 0) : m.start])
            ),
            None,
        )
        if counted is None:
            return None
        owner = column_mention.entry.table
        if owner != counted and not self._reachable(counted, owner):
            return None
        key = self._column_ref(owner, column_mention.entry.column, counted)
        extra = tuple(
            j for j in (*joins, subject.qualified, owner.qualified) if j != counted.qualified
        )
        singular = asked.group(1) == norm(asked.group(1))
        return Intent(
            IntentKind.GROUP_BY,
            counted.qualified,
            tuple(dict.fromkeys(extra)),
            filters=tuple(_rebase(f, subject, counted) for f in filters),
            group_by=(Group(key),),
            order_by=(Order(by_aggregate=True, descending=direction),),
            limit=self.limit or (1 if singular else 0),
            aggregate=Aggregate.COUNT,
        )

    def _ranked_group(
        self,
        subject: TableInfo,
        joins: tuple[str, ...],
        filters: list[Filter],
        measure: tuple[TableInfo, ColumnInfo] | None,
        direction: bool,
    ) -> Intent | None:
        """ "Which rep won the most deals?": rank the subject by something another table
        holds, i.e. group that table by the subject's name."""
        counted: TableInfo | None = None
        for mention in self.mentions:
            if mention.entry.kind == "table" and mention.entry.table != subject:
                before = self.words[max(mention.start - 2, 0) : mention.start]
                if {"most", "fewest", "least", "more"} & set(before):
                    counted = mention.entry.table
                    break
        source = counted or (measure[0] if measure and measure[0] != subject else None)
        if source is None or not self._reachable(source, subject):
            return None
        display = self._display_columns(subject)[0]
        rebased = [_rebase(f, subject, source) for f in filters]
        joins_from_source = tuple(dict.fromkeys([subject.qualified, *joins]))
        joins_from_source = tuple(j for j in joins_from_source if j != source.qualified)
        if measure is not None and counted is None:
            function, column = Aggregate.SUM, self._column_ref(measure[0], measure[1], source)
        else:
            function, column = Aggregate.COUNT, ""
        groups = [Group(f"{subject.name}.{display.name}")]
        # The key travels with the name: two rows with one name stay apart, and a later
        # step can look the entity up by its id (the router scopes documents by it).
        if len(subject.primary_key) == 1 and subject.primary_key[0] != display.name:
            groups.append(Group(f"{subject.name}.{subject.primary_key[0]}"))
        return Intent(
            IntentKind.GROUP_BY,
            source.qualified,
            joins_from_source,
            filters=tuple(rebased),
            group_by=tuple(groups),
            order_by=(Order(by_aggregate=True, descending=direction),),
            limit=self.limit or (0 if self._plural_subject(subject) else 1),
            aggregate=function,
            aggregate_column=column,
        )


def _rebase(spec: Filter, old: TableInfo, new: TableInfo) -> Filter:
    """A filter written against ``old`` as main table, for ``new`` as main table."""
    if "." in spec.column or old == new:
        return spec
    return replace(spec, column=f"{old.name}.{spec.column}")


def _is_rate_word(word: str, rate_word: str) -> bool:
    return norm(word) == norm(rate_word)


def _merge_equal(filters: list[tuple[int, Filter]]) -> list[tuple[int, Filter]]:
    """Several values of one column become one IN filter."""
    merged: dict[str, tuple[int, Filter]] = {}
    for position, spec in filters:
        if spec.column in merged and spec.op in (FilterOp.EQUAL, FilterOp.IN):
            first_pos, first = merged[spec.column]
            if first.op in (FilterOp.EQUAL, FilterOp.IN):
                values = tuple(dict.fromkeys(first.values + spec.values))
                merged[spec.column] = (first_pos, Filter(spec.column, FilterOp.IN, values))
                continue
        merged.setdefault(spec.column, (position, spec))
    return list(merged.values())


# --- the generator ------------------------------------------------------------------------


class RuleBasedGenerator:
    """The deterministic :class:`~services.sql._ask.SqlGenerator`: always an intent."""

    model_name = MODEL_NAME

    def __init__(self) -> None:
        self._lexicons: dict[tuple[str, float], _Lexicon] = {}
        self._vocabularies: dict[tuple[str, float], Vocabulary] = {}

    def _vocabulary(self, catalog: Catalog) -> Vocabulary:
        key = (catalog.database, catalog.refreshed_at.timestamp())
        vocabulary = self._vocabularies.get(key)
        if vocabulary is None:
            if len(self._vocabularies) > 16:
                self._vocabularies.clear()
            vocabulary = Vocabulary(catalog, JoinGraph(catalog))
            self._vocabularies[key] = vocabulary
        return vocabulary

    def _link(self, question: str, schema: SchemaView) -> _Reading:
        """The schema linker's reading: a statement with every phrase linked, or the
        reason it could not link (``sql`` empty)."""
        glossary = (*schema.glossary, *parse_definitions(schema.instructions))
        try:
            linked = QuestionLinker(
                question,
                self._vocabulary(schema.catalog),
                schema.today,
                glossary,
                schema.instructions,
            ).link()
        except LinkError as exc:
            return _Reading(reason=str(exc))
        except Exception as exc:  # a linker bug must not fail the question: the rules answer
            _log.warning(
                "schema linker failed; the intent rules take over",
                extra={"fields": {"error.type": type(exc).__name__}},
            )
            return _Reading(reason="the schema linker could not read the question")
        used = set(linked.applied)
        return _Reading(
            interpretation=linked.explanation,
            tables=list(linked.tables),
            sql=linked.sql,
            applied=linked.applied,
            ignored=tuple(
                e.term for e in glossary if e.term not in used and e.source != "question"
            ),
        )

    def _lexicon(self, catalog: Catalog) -> _Lexicon:
        key = (catalog.database, catalog.refreshed_at.timestamp())
        lexicon = self._lexicons.get(key)
        if lexicon is None:
            if len(self._lexicons) > 16:
                self._lexicons.clear()
            lexicon = self._lexicons[key] = _Lexicon(catalog)
        return lexicon

    def read(self, question: str, schema: SchemaView) -> _Reading:
        """The schema linker's statement when every phrase links; else the intent rules,
        when their reading explains every word of the question (else a refusal)."""
        linked = self._link(question, schema)
        if linked.sql:
            return linked
        reading = self.read_rules(question, schema)
        if reading.intent is None or self._unexplained(question, reading, schema) is not None:
            # the linker's reason names what was missing
            return _Reading(reason=linked.reason or reading.reason)
        return reading

    def _unexplained(self, question: str, reading: _Reading, schema: SchemaView) -> str | None:
        intent = reading.intent
        assert intent is not None
        names = [intent.table, *intent.join_tables]
        tables = [t.qualified for t in (schema.catalog.table(n) for n in names) if t is not None]
        values = [
            str(v.value)
            for f in (*intent.filters, *reading.numerator)
            for v in f.values
            if isinstance(v.value, str)
        ]
        # table comments name synonyms ("opportunities (deals)"); the rules' own cue words
        extra = {
            stem(w)
            for name in tables
            for t in [schema.catalog.table(name)]
            if t is not None
            for w in _WORD.findall(t.comment.lower())
        }
        extra |= set(_OPEN_WORDS) | set(_IRREGULAR) | _DESC | _ASC | _RECENCY | set(_GRAINS)
        return unexplained(
            question,
            self._vocabulary(schema.catalog),
            tables,
            values,
            divides=reading.ratio,
            extra=extra,
            documented=True,
        )

    def read_rules(self, question: str, schema: SchemaView) -> _Reading:
        """The intent rules alone (cue words over a catalog whose comments name its
        tables' synonyms): the fallback when the linker refuses."""
        reading = _Reader(question, schema, self._lexicon(schema.catalog)).read()
        if reading.intent is not None:
            try:
                if reading.ratio:
                    compiled = compile_ratio(reading.intent, reading.numerator, schema.catalog)
                else:
                    compiled = compile_intent(reading.intent, schema.catalog, row_cap=1000)
                reading.interpretation = compiled.explanation
            except IntentError as exc:
                reading.interpretation = f"could not shape the question: {exc.description}"
        return reading

    @staticmethod
    def _call(role: GeneratorRole, started: float) -> tuple[ModelCall, ...]:
        return (
            ModelCall(
                role=role,
                tier=ModelTier.DETERMINISTIC,
                model_name=MODEL_NAME,
                duration_s=time.perf_counter() - started,
            ),
        )

    async def understand(self, question: str, schema: SchemaView) -> Understanding:
        started = time.perf_counter()
        reading = self.read(question, schema)
        calls = self._call(GeneratorRole.UNDERSTAND, started)
        if reading.sql:
            return Understanding(interpretation=reading.interpretation, calls=calls)
        if reading.intent is None:
            return Understanding(
                interpretation="", answerable=False, reason=reading.reason, calls=calls
            )
        return Understanding(
            interpretation=reading.interpretation,
            intent=reading.intent,
            calls=calls,
        )

    async def identify_tables(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> TableChoice:
        started = time.perf_counter()
        reading = self.read(question, schema)
        return TableChoice(
            tuple(reading.tables), self._call(GeneratorRole.IDENTIFY_TABLES, started)
        )

    async def generate(
        self, question: str, understanding: Understanding, schema: SchemaView
    ) -> Proposal:
        started = time.perf_counter()
        reading = self.read(question, schema)
        calls = self._call(GeneratorRole.GENERATE_SQL, started)
        return self._proposal(reading, schema.catalog, calls)

    def _proposal(
        self, reading: _Reading, catalog: Catalog, calls: tuple[ModelCall, ...]
    ) -> Proposal:
        if reading.sql:
            return Proposal(
                sql=reading.sql,
                explanation=reading.interpretation,
                calls=calls,
                definitions_applied=reading.applied,
                definitions_ignored=reading.ignored,
            )
        if reading.intent is None:
            return Proposal(explanation=reading.reason, calls=calls)
        if reading.ratio:
            try:
                compiled = compile_ratio(reading.intent, reading.numerator, catalog)
            except IntentError as exc:
                return Proposal(explanation=str(exc), calls=calls)
            return Proposal(sql=compiled.sql, explanation=compiled.explanation, calls=calls)
        return Proposal(intent=reading.intent, calls=calls)

    async def repair(
        self,
        question: str,
        understanding: Understanding,
        schema: SchemaView,
        previous: Proposal,
        failure: Failure,
    ) -> Proposal:
        """Drop the part of the intent the failure names; with nothing to drop, give up
        (a rule-based reading does not get better by asking again)."""
        started = time.perf_counter()
        calls = self._call(GeneratorRole.REPAIR_SQL, started)
        intent = previous.intent
        if intent is None:
            return Proposal(explanation="no rule-based repair for a SQL proposal", calls=calls)
        match = re.match(r"intent\.(filters|group_by|join_tables)\[(\d+)\]", failure.message)
        if match is None:
            return Proposal(explanation="no rule-based repair for this failure", calls=calls)
        part, index = match.group(1), int(match.group(2))
        if part == "filters" and index < len(intent.filters):
            kept = intent.filters[:index] + intent.filters[index + 1 :]
            return Proposal(intent=replace(intent, filters=kept), calls=calls)
        if part == "group_by" and index < len(intent.group_by):
            groups = intent.group_by[:index] + intent.group_by[index + 1 :]
            return Proposal(intent=replace(intent, group_by=groups), calls=calls)
        if part == "join_tables" and index < len(intent.join_tables):
            joins = intent.join_tables[:index] + intent.join_tables[index + 1 :]
            return Proposal(intent=replace(intent, join_tables=joins), calls=calls)
        return Proposal(explanation="no rule-based repair for this failure", calls=calls)
