"""Schema linking for any warehouse: a question's phrases mapped to columns, tables,
stored values and business definitions, then composed into one SELECT.

Nothing here knows a particular schema. Names are read the way people write them
(``sbTxCustId`` is "transaction customer id" once the table's own column prefix stands for
the table); words match names exactly or as abbreviations (``amt`` for amount, ``dt`` for
date); rare name words weigh more than common ones (inverse document frequency over the
catalog's column names); values named in the question are found in the columns whose
stored values contain them; tables are joined along the join graph (declared keys, then
inferred ones). Every phrase of the output list must link, or the question is refused with
what was missing: a clear refusal beats a confident wrong answer.

The statement is composed as text from catalog identifiers (quoted where needed) and
literals rendered by sqlglot, and then goes through the gate like any other. What the
catalog says about itself is indexed in ``_vocabulary``; how question words match names is
``_words``; definitions written in text are read by ``_definitions``.
"""

from __future__ import annotations

import calendar
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

import sqlglot
from sqlglot import exp

from services.sql._catalog import TableInfo
from services.sql._definitions import (
    inline_definitions,
    is_wordy,
    trim_definition,
)
from services.sql._glossary import GlossaryEntry
from services.sql._names import identifier
from services.sql._vocabulary import Col, Vocabulary, column_states, negate_state
from services.sql._words import (
    GRAMMAR_WORDS,
    STOP_WORDS,
    Tok,
    cover,
    lemma,
    maybe_covers,
    stem,
    tokenize,
    word_match,
)

_COUNT_CUES = ("number of", "count of", "how many", "num of", "no. of", "total count of")
_AGG_WORDS = {
    "total": "SUM",
    "sum": "SUM",
    "average": "AVG",
    "avg": "AVG",
    "mean": "AVG",
    "maximum": "MAX",
    "max": "MAX",
    "highest": "MAX",
    "largest": "MAX",
    "minimum": "MIN",
    "min": "MIN",
    "lowest": "MIN",
    "smallest": "MIN",
}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_GRAINS = {"day": "day", "week": "week", "month": "month", "quarter": "quarter", "year": "year"}


class LinkError(Exception):
    """The question does not map onto this schema; the message says what was missing."""


@dataclass(frozen=True)
class Linked:
    """The composed statement, the tables it reads, and which definitions it used."""

    sql: str
    tables: tuple[str, ...]
    explanation: str
    applied: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def q(name: str) -> str:
    return identifier(name).sql(dialect="postgres")


def lit(value: str) -> str:
    return exp.Literal.string(value).sql(dialect="postgres")


# --- the vocabulary of one catalog ---------------------------------------------------


_RECENCY = re.compile(r"\b(?:most\s+recent(?:ly)?|latest|newest|oldest|earliest)\b")


# --- reading a question --------------------------------------------------------------


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
    order: list[tuple[str, bool]] = field(default_factory=list)  # (expression alias/index, desc)
    limit: int = 0
    distinct: bool = False
    entity: TableInfo | None = None  # grouped/listed entity (keys kept in GROUP BY)
    applied: list[str] = field(default_factory=list)


# Parsed definitions remembered per catalog (a glossary's entries, a request's own).
_DEFINITIONS_MAX = 512


class QuestionLinker:
    """Links one question (with its definitions) to one catalog."""

    def __init__(
        self,
        question: str,
        vocab: Vocabulary,
        today: date,
        glossary: Sequence[GlossaryEntry] = (),
        instructions: str = "",
    ) -> None:
        self.vocab = vocab
        self.instructions = instructions
        self.catalog = vocab.catalog
        self.graph = vocab.graph
        self.today = today
        self.glossary = [*glossary, *inline_definitions(question)]
        self.applied: list[str] = []
        self.left = False  # outer joins from the grouped entity (see _keeps_all)
        self.known: set[str] = set()  # words a composed feature explains (e.g. "weekend")
        self.original = question
        self.question = self._expand(question)
        self.low = self.question.lower()
        toks = tokenize(self.question)
        # every content word of the question, and the tables it names in order
        self.words = [
            stem(p)
            for t in toks
            if not t.quoted
            for p in t.low.split("_")
            if p and p not in STOP_WORDS
        ]
        self.named: list[TableInfo] = self._named_tables(toks)
        # words inside a multi-word name the question uses ("Security Suite"): part of
        # that name, not values of their own
        self.in_names = {
            t.low
            for size in (2, 3, 4)
            for i in range(len(toks) - size + 1)
            if " ".join(w.low for w in toks[i : i + size]) in vocab.names
            for t in toks[i : i + size]
        }

    # -- definitions ------------------------------------------------------------------

    def _expand(self, question: str) -> str:
        """Replace a defined term (an acronym like "TSC", or a phrase) by its definition
        when the definition is words ("TSC = Total Sales Count")."""
        for entry in self.glossary:
            body = entry.definition or entry.expression
            for name in entry.names:
                if not name:
                    continue
                pattern = re.compile(rf"\b{re.escape(name)}\b")
                operations = {stem(w) for w in re.findall(r"[a-z]+", body.lower())} & _OPERATIONS
                if (
                    pattern.search(question)
                    and body
                    and is_wordy(body)
                    and not operations
                    and self._sql_definition(entry) is None
                ):
                    replacement = trim_definition(body)
                    question = pattern.sub(replacement.replace("\\", r"\\"), question)
                    self.applied.append(entry.term)
                    break
        return question

    # -- entry point ------------------------------------------------------------------

    def link(self) -> Linked:
        toks = tokenize(self.question)
        share = self._share(toks)
        if share is not None:
            return share
        head, output_text, cond_text = self._split_output(self.question)
        plan = Plan()
        plan.limit, desc = self._limit()
        plan.distinct = bool(re.search(r"\b(distinct|unique)\b", self.low)) and not re.search(
            r"\b(number|count) of (distinct|unique)\b", self.low
        )
        resolved: list[Dim | Measure] = []
        missing: list[str] = []
        for phrase in _merge_elliptic(_split_items(output_text), self):
            if re.fullmatch(
                r"\s*(?:and\s+)?rounded?\s+(?:off\s+)?to\s+\d\s+decimal(?:\s+places?)?\s*",
                phrase,
                re.I,
            ):
                continue  # formatting, applied to the measures (see _compose)
            got = self._item(phrase)
            if got is None:
                missing.append(phrase)
            else:
                resolved.extend(got)
        # measures the question asks for before its output list ("what is the average X
        # and number of Y per Z? Return the top 5 Z ...")
        if head:
            pieces = []
            for phrase in _split_items(head):
                pieces += [phrase, *re.findall(r"\bby\s+(.+)$", phrase)]
            for phrase in pieces:
                cleaned = _clean_item(phrase).lower()
                if re.search(r"[/*]|\s-\s", cleaned):
                    m = self._arith(cleaned)
                else:
                    m = self._measure(cleaned)
                if m is None or any(
                    isinstance(r, Measure) and _same_measure(r, m) for r in resolved
                ):
                    continue
                for i, r in enumerate(resolved):
                    if isinstance(r, Measure) and _refines(m, r) and self._fits(m, r):
                        resolved[i] = m  # "average drug amount per treatment" says which
                        break
                else:
                    resolved.append(m)
        if any(isinstance(r, Measure) and r.func == "COUNT" and r.table for r in resolved):
            # "the total count" after "the number of sessions": one count, not two
            resolved = [r for r in resolved if not _bare_count(r)]
        for phrase in list(missing):
            generic = set(re.findall(r"[a-z]+", phrase.lower())) <= _RESULT_WORDS
            if self._covered(phrase, resolved) or (generic and resolved):
                missing.remove(phrase)
        if missing:
            raise LinkError(f"nothing in the schema matches {missing[0]!r}")
        if not resolved:
            raise LinkError("the question names no column or table of this database")
        for r in resolved:
            if isinstance(r, Dim):
                if not any(d.col.key == r.col.key and d.grain == r.grain for d in plan.dims):
                    plan.dims.append(r)
            else:
                plan.measures.append(r)
        for d in plan.dims:
            if d.pending:
                chosen = self._date_column(Plan(measures=plan.measures))
                if chosen is None:
                    raise LinkError(f"no date column to group by {d.grain}")
                d.col, d.pending = chosen, False
        self._day_kinds(plan)
        self._groups(plan)
        self._ordering(plan, desc)
        self._conditions(plan, cond_text or self.question, toks)
        self._semi(plan, cond_text)
        return self._compose(plan)

    def _named_tables(self, toks: list[Tok]) -> list[TableInfo]:
        """Tables the question names anywhere, in order of first mention."""
        words = [stem(p) for t in toks if not t.quoted for p in re.split(r"_", t.low) if p]
        found: list[tuple[int, TableInfo]] = []
        for table in self.catalog.tables:
            hits = [
                i
                for parts in self.vocab.table_names(table)
                if parts and all(maybe_covers(words, p) for p in parts)
                for i in range(len(words))
                if any(
                    sum(cover(words[i : i + width], p)[0] for p in parts) / len(parts) >= 0.99
                    for width in range(len(parts), len(parts) + 3)
                )
            ]
            if hits:
                found.append((min(hits), table))
        return [t for _, t in sorted(found, key=lambda p: p[0])]

    def _covered(self, phrase: str, resolved: list[Dim | Measure]) -> bool:
        """An output item already answered by a measure the question spelled out in full
        ("maximum itch score" after "maximum itch VAS score at day 100")."""
        low = _clean_item(phrase).lower()
        cue = next((w for w in low.split() if w in _AGG_WORDS), "")
        if not cue:
            return False
        func = _AGG_WORDS[cue]
        words = {stem(w) for w in re.findall(r"[a-z0-9]+", low) if w not in STOP_WORDS}
        for r in resolved:
            if isinstance(r, Measure) and r.func == func and r.col is not None:
                label = {stem(w) for w in re.findall(r"[a-z0-9]+", r.label)}
                if words - set(_AGG_WORDS) <= label | set(self.vocab.column_words[r.col.key]):
                    return True
        return False

    # -- output list --------------------------------------------------------------------

    def _split_output(self, text: str) -> tuple[str, str, str]:
        """What the question asks before its output list, the output list, and the rest."""
        returns = list(
            re.finditer(
                r"(?:^|[.?!;]\s+|\bplease\s+|\bthen\s+|\bto\s+)(?:return|show|list|give me|display|output)\s+"
                r"(?:the\s+|their\s+|its\s+|all\s+)?",
                text,
                re.I,
            )
        )
        if returns:
            m = returns[-1]
            out, tail = _cut_relative(text[m.end() :])
            head_text = text[: m.start()]
            head = ""
            h = re.search(
                r"\b(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+)?(.*?)(?:[?.]|$)",
                head_text,
                re.I,
            )
            if h:
                head = _cut_relative(h.group(1))[0]
            many = re.match(r"\s*how many\s+", head_text, re.I)
            generic = re.fullmatch(
                r"\s*(?:the\s+)?(?:total\s+)?(?:count|number)s?\s*[.?]?\s*", out, re.I
            )
            if many and generic and not head:
                # "How many customers joined in 2023? Return the total count."
                head = "number of " + self._count_noun(head_text[many.end() :])
            return head, out, head_text + " " + tail
        which = re.match(
            r"\s*(?:which|what)\s+(?:\d+\s+)?((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?=(?:have|has|had|are|is|were|was|did|do|does|made|sold|got|received|came)\b)",
            text,
            re.I,
        )
        if which is None:
            # "Which sales rep owns the most companies?": any verb before a superlative
            which = re.match(
                r"\s*(?:which|what)\s+(?:\d+\s+)?((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?=[a-z]+\s+the\s+(?:most|fewest|least|highest|lowest|largest|smallest)\b)",
                text,
                re.I,
            )
        if which:
            words = [stem(w) for w in which.group(1).lower().split() if w not in STOP_WORDS]
            hits = self.vocab.tables_named(words)
            if hits and _only_table(words, hits, self.vocab):
                # "Which 10 companies have the most employees?": list the companies
                return "", which.group(1), text[which.end() :]
        what = re.search(r"^\s*(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+)?", text, re.I)
        if what:
            out, tail = _cut_relative(text[what.end() :])
            return "", out, tail
        many = re.search(r"^\s*how many\s+|^\s*count\s+(?:the\s+|all\s+)?", text, re.I)
        if many:
            rest = text[many.end() :]
            noun = self._count_noun(rest)
            return "", "number of " + noun, rest[len(noun) :]
        return "", text, text

    def _count_noun(self, rest: str) -> str:
        """What "how many" counts: the words up to a verb, a grammar word or a table's
        name ("meetings" of "meetings happened this quarter")."""
        noun: list[str] = []
        for w in rest.split():
            if w.lower() in _BE or w.lower() in ("do", "does", "did", "have", "has", "had"):
                break
            if noun and (w.lower().strip("?,.") in GRAMMAR_WORDS or w.lower() in STOP_WORDS):
                break  # "meetings happened this quarter": the noun has ended
            noun.append(w)
            if self.vocab.tables_named([stem(w.strip("?,."))]) or len(noun) >= 5:
                break
        return " ".join(noun)

    def _item(self, phrase: str) -> list[Dim | Measure] | None:
        inner = re.search(r"\(([^)]*)\)", phrase)
        if inner and re.search(r",|\band\b", inner.group(1)):
            out: list[Dim | Measure] = []
            for part in _split_items(inner.group(1)):
                got = self._item(part)
                if got is None:
                    return None
                out.extend(got)
            return out
        low = self._without_conditions(_clean_item(phrase).lower())
        if re.search(r"\S", _RECENCY.sub("", low)):
            low = " ".join(_RECENCY.sub("", low).split())
        if not low:
            return []
        ranked = self._ranked(phrase)
        if ranked is not None:
            return [ranked]
        grain = re.fullmatch(r"(?:the\s+)?(day|week|month|quarter|year)(?:\s+\(as a date\))?", low)
        if grain and self._column([grain.group(1)], threshold=0.99) is None:
            # the date column is chosen once the measures say which table it is
            anchor = Col(self.catalog.tables[0], self.catalog.tables[0].columns[0])
            return [Dim(anchor, grain.group(1), pending=True)]
        # arithmetic definitions inline ("(total sales amount / number of sales)")
        if re.search(r"[/*]|\s-\s", low):
            m = self._arith(low)
            return [m] if m else None
        day_kind = re.search(r"\b(weekend|weekday)s?\b", low)
        if day_kind:
            rest = (low[: day_kind.start()] + low[day_kind.end() :]).strip()
            rest = re.sub(r"^(?:number of|count of|total)\s+", "", rest)
            counted = self._measure("number of " + rest) if rest else None
            if counted is not None and counted.func in ("COUNT", "COUNT_DISTINCT"):
                counted.dow = True
                return [counted]
        measure = self._measure(low)
        if measure is not None:
            return [measure]
        words = [stem(w) for w in re.findall(r"[a-z0-9]+", low) if w not in STOP_WORDS]
        if not words:
            return []
        if words == ["id"]:
            # "their ID": the key of the entity the question goes through ("each salesperson")
            entity = self._each_entity()
            if entity is not None and len(entity.primary_key) == 1:
                key = entity.column(entity.primary_key[0])
                if key is not None:
                    return [Dim(Col(entity, key))]
        if len(words) >= 2 and words[-1] in ("id", "identifier", "key"):
            owners = self.vocab.tables_named(words[:-1])
            if owners and len(owners[0][0].primary_key) == 1:
                owner = owners[0][0]
                key = owner.column(owner.primary_key[0])
                if key is not None:
                    return [Dim(Col(owner, key))]
        col = self._column(words)
        table_hits = self.vocab.tables_named(words)
        if col is not None and (
            not table_hits
            or self.vocab.column_score(words, col) >= 0.99
            or not _only_table(words, table_hits, self.vocab)
        ):
            return self._shown(col, words)
        if table_hits:
            table = table_hits[0][0]
            return [Dim(c) for c in self._labels(table)]
        return None

    def _shown(self, col: Col, words: Sequence[str]) -> list[Dim | Measure]:
        """What to show for a column the output names: a reference ("the account owner")
        shows the row it points to by name, a flag that names its rows ("primary
        contacts") shows those rows (the flag becomes their condition)."""
        asks_key = any(w in ("id", "identifier", "key", "number", "code") for w in words)
        if not asks_key and col.column.name not in col.table.primary_key:
            for edge in self.graph.edges_of(col.table.qualified):
                if edge.child == col.table.qualified and edge.child_column == col.column.name:
                    parent = self.catalog.table(edge.parent)
                    labels = [c for c in self._labels(parent) if not _is_key(c)] if parent else []
                    if labels:
                        return list(map(Dim, labels))
        if col.column.data_type == "boolean" and any(
            self.vocab.table_score([w], col.table) >= 0.99 for w in words
        ):
            labels = self._labels(col.table)
            if labels:
                return list(map(Dim, labels))
        return [Dim(col)]

    def _share(self, toks: list[Tok]) -> Linked | None:
        """ "What percentage of companies are Enterprise?", "What share of opportunities
        came from partners?": rows meeting a stored value or flag, per hundred rows (to two
        decimals). "What is the ratio of X to Y?": two counts divided."""
        ratio = re.search(
            r"\bratio\s+of\s+(?:the\s+)?(.+?)\s+to\s+(?:the\s+)?(.+?)(?=[?.,;]|$)", self.low
        )
        if ratio:
            return self._ratio(ratio.group(1), ratio.group(2))
        m = re.search(
            r"\b(percentage|percent|share|proportion|fraction)\s+of\s+(?:all\s+|the\s+)?([a-z]+(?:\s[a-z]+)?)\s+(?:are|is|were|was|have|has|had|that|which|who|with|came|come|got)\b(.*)$",
            self.low,
        )
        if m is None:
            return None
        words = [stem(w) for w in m.group(2).split() if w not in STOP_WORDS]
        hits = self.vocab.tables_named(words)
        if not hits:
            return None
        table = hits[0][0]
        tail_start = m.start(3)
        plan = Plan()
        counted = Measure("COUNT", table=table, label=m.group(2))
        plan.measures.append(counted)
        self._conditions(plan, self.question, toks)
        inside = [
            f
            for f in plan.filters
            if f[0].table is table and self._mentioned_after(f, toks, tail_start)
        ]
        if len(inside) != 1:
            return None
        plan.filters.remove(inside[0])
        col, cond = inside[0]
        share = Measure("SHARE", table=table, label=m.group(0), filter=(col, cond))
        plan.measures = [share]
        return self._compose(plan)

    def _ratio(self, first: str, second: str) -> Linked:
        """ "ratio of products to suppliers": two counts; of one table with two stored
        values ("active to inactive customers") they are filtered counts of that table."""
        a = self._measure("number of " + first)
        b = self._measure("number of " + second)
        if a is None or b is None or a.table is None or b.table is None:
            raise LinkError(f"nothing in the schema matches {first if a is None else second!r}")
        tables = [a.table.qualified, b.table.qualified]
        values = [f[1] for f in (a.filter, b.filter) if f is not None]
        word = unexplained(
            self.question,
            self.vocab,
            tables,
            re.findall(r"'([^']*)'", " ".join(values)),
            divides=True,
            terms=self.applied,
        )
        if word is not None:
            raise LinkError(f"nothing in the schema matches {word!r}")

        def count(m: Measure) -> str:
            where = ""
            if m.filter is not None:
                where = " WHERE " + m.filter[1].replace("{c}", q(m.filter[0].column.name))
            assert m.table is not None
            return f"(SELECT COUNT(*) FROM {_table_sql(m.table)}{where})"

        sql = f"SELECT {count(a)} * 1.0 / NULLIF({count(b)}, 0) AS ratio"
        explanation = f"Divides the number of {a.table.name} by the number of {b.table.name}."
        return Linked(sql, tuple(dict.fromkeys(tables)), explanation, tuple(self.applied))

    def _mentioned_after(self, found: tuple[Col, str], toks: list[Tok], start: int) -> bool:
        """The condition's value is written after ``start`` in the question."""
        col, cond = found
        values = re.findall(r"'((?:[^']|'')*)'", cond)
        if not values:
            parts = self.vocab.column_words[col.key]
            return any(t.start >= start and any(word_match(t.stem, p) for p in parts) for t in toks)
        value = values[0].lower()
        inside = {lemma(w) for w in re.findall(r"[a-z]+", value)}
        return any(
            t.start >= start
            and (
                t.low == value
                or (len(value) >= 4 and t.low.startswith(value))
                or (len(inside) > 1 and lemma(t.low) in inside)
            )
            for t in toks
        )

    def _day_kinds(self, plan: Plan) -> None:
        """ "how many of these were on weekends": the count again, of the rows whose date
        falls on a Saturday or Sunday (weekdays: Monday to Friday)."""
        kind = re.search(r"\b(?:on|during|over)\s+(?:the\s+)?(weekends?|weekdays?)\b", self.low)
        if kind is None:
            kind = re.search(r"\b(weekend|weekday)\s+\w+", self.low)
        if kind is None:
            return
        counts = [m for m in plan.measures if m.func in ("COUNT", "COUNT_DISTINCT")]
        if not counts:
            return
        date_col = self._date_column(Plan(measures=plan.measures, dims=plan.dims))
        if date_col is None:
            return
        days = "(0, 6)" if kind.group(1).startswith("weekend") else "(1, 2, 3, 4, 5)"
        base = counts[0]
        for m in plan.measures:
            if m.dow:
                m.filter = (date_col, f"EXTRACT(DOW FROM {{c}}) IN {days}")
                break
        else:
            extra = Measure(
                base.func, table=base.table, col=base.col, label=f"{kind.group(1)} count"
            )
            extra.filter = (date_col, f"EXTRACT(DOW FROM {{c}}) IN {days}")
            plan.measures.append(extra)
        self.known |= {"weekend", "weekday", "saturday", "sunday", "dow"}

    def _ranked(self, phrase: str) -> Measure | None:
        """A defined rank ("SR = sales rank of each salesperson ordered by their total sales
        amount descending"): RANK() over the measure it orders by, within a column when
        the definition says "within their …"."""
        name = _clean_item(phrase).strip()
        for entry in self.glossary:
            body = entry.definition or entry.expression
            if name not in entry.names or not re.search(r"\brank", body, re.I):
                continue
            low = body.lower()
            m = re.search(
                r"\b(?:by|on|based on)\s+(?:their\s+|its\s+|the\s+)?([a-z0-9 ]+?)(?=[,.;]|\s+(?:descending|ascending|desc|asc|with|where|from)\b|$)",
                low,
            )
            if m is None:
                return None
            measure = self._measure(m.group(1)) or self._measure("total " + m.group(1))
            if measure is None:
                return None
            partition: Col | None = None
            within = re.search(
                r"\bwithin (?:their|its|the|each)\s+([a-z ]+?)(?=\s+by\b|[,.;]|$)", low
            )
            if within:
                words = [stem(w) for w in within.group(1).split() if w not in STOP_WORDS]
                partition = self._column(words)
                if partition is None:
                    return None
            ascending = bool(
                re.search(r"\bascending\b|\blowest\b[^.]*\brank 1\b|rank 1[^.]*\blowest\b", low)
            )
            if entry.term not in self.applied:
                self.applied.append(entry.term)
            return Measure(
                "RANK",
                label=name,
                expr=[measure],
                partition=partition,
                descending=not ascending,
                tables=tuple(
                    t for t in (measure.table, measure.col.table if measure.col else None) if t
                ),
            )
        return None

    def _each_entity(self) -> TableInfo | None:
        """The table named after "each", "per" or "for every" in the question."""
        m = re.search(r"\b(?:each|every|per)\s+([a-z]+)", self.low)
        if m is None:
            return None
        hits = self.vocab.tables_named([stem(m.group(1))])
        return hits[0][0] if hits else None

    def _labels(self, table: TableInfo) -> list[Col]:
        """What names an entity: its key and its name-like columns."""
        cols = []
        if table.primary_key:
            pk = table.column(table.primary_key[0])
            if pk:
                cols.append(Col(table, pk))
        for column in table.columns:
            words = self.vocab.column_words[(table.qualified, column.name)]
            if "name" in words or "title" in words or "symbol" in words or "code" in words:
                cols.append(Col(table, column))
        if len(cols) <= 1:
            # no name-like column: the first short, varied text the value index holds
            # (an activity's subject line, not its free-text notes)
            labelled = next((c for c in table.columns if c.known_values), None)
            if labelled is not None:
                cols.append(Col(table, labelled))
        return cols

    def _column(
        self,
        words: Sequence[str],
        prefer: Iterable[TableInfo] = (),
        numeric: bool = False,
        threshold: float = 0.5,
    ) -> Col | None:
        best: tuple[float, Col] | None = None
        preferred = {t.qualified for t in prefer}
        named = {t.qualified: i for i, t in enumerate(self.named)}
        for col in self.vocab.columns:
            if numeric and (not _is_number(col.column.data_type) or _is_key(col)):
                continue
            raw = self.vocab.column_score(words, col)
            if raw < threshold:
                continue
            score = raw
            if col.table.qualified in preferred:
                score += 0.3
            if numeric:
                if any(
                    e.child == col.table.qualified for e in self.graph.edges_of(col.table.qualified)
                ):
                    score += 0.2
                score += 0.2 * self.vocab.table_score(self.words, col.table)
            elif col.table.qualified in named:
                score += 0.3 - 0.02 * named[col.table.qualified]
            else:
                score += 0.2 * self.vocab.table_score(self.words, col.table)
            if best is None or score > best[0] + 1e-9:
                best = (score, col)
        return best[1] if best else None

    def _measure(self, low: str, *, depth: int = 0) -> Measure | None:
        low = re.sub(r"^(?:the\s+)?", "", low)
        func = ""
        rest = low
        low = low.replace("_", " ")
        for cue in _COUNT_CUES:
            if low.startswith(cue) or low.startswith("total " + cue):
                func = "COUNT"
                rest = low.split(cue, 1)[1]
                break
        else:
            m = re.match(r"(.*?)\s+(count|counts)$", low)
            if re.match(r"(?:the\s+)?(?:respective\s+|total\s+)?counts?$", low):
                return Measure("COUNT", label="count")  # "the total count": of the rows
            if m:
                func, rest = "COUNT", re.sub(r"^total\s+", "", m.group(1))
            else:
                m = re.match(
                    r"(?:the\s+)?(?:\w+\s+){0,2}?(total|sum|average|avg|mean|maximum|max|highest|"
                    r"largest|minimum|min|lowest|smallest)\s+(?:of\s+)?(.*)",
                    low,
                )
                if m:
                    func = _AGG_WORDS[m.group(1)]
                    rest = m.group(2)
                    low = f"{m.group(1)} {rest}"
                else:
                    m = re.match(r"(.*?)\s+(total|sum)$", low)
                    if m:
                        func, rest = "SUM", m.group(1)
        if not func:
            return self._defined(low, depth) if depth < 2 else None
        between = re.match(
            r"(?:number of\s+)?(days|hours|minutes|seconds)\s+between\s+(.+?)\s+and\s+(.+)$",
            rest.strip(),
        )
        if between:
            return self._elapsed(func, between.group(1), between.group(2), between.group(3), rest)
        distinct = False
        m = re.match(r"\s*(distinct|unique)\s+(.*)", rest)
        if m:
            distinct, rest = True, m.group(2)
        label = rest
        per = re.search(r"\s+(?:per|for each|for every)\s+((?:\w+\s+){0,2}\w+)$", rest)
        prefer: list[TableInfo] = []
        if per:
            rest = rest[: per.start()]
            per_words = [stem(w) for w in per.group(1).split() if w not in STOP_WORDS]
            prefer = [t for t, _ in self.vocab.tables_named(per_words)]
            prefer += [t for t, _ in self.vocab.tables_named(per_words[:1]) if t not in prefer]
        joined: list[TableInfo] = []
        having = re.search(r"\s+(?:with|having)\s+(?:a\s+|an\s+|any\s+)?(\w+)$", rest)
        if having:
            hits = self.vocab.tables_named([stem(having.group(1))])
            if hits:
                # "customers with transactions": only those that join the other table
                rest = rest[: having.start()]
                joined = [hits[0][0]]
        words = [stem(w) for w in re.findall(r"[a-z0-9]+", rest) if w not in STOP_WORDS]
        words = [w for w in words if w not in ("number", "count")]
        cue_word = low.split()[0] if low.split() else ""
        threshold = 0.5
        if func == "COUNT":
            for i, w in enumerate(list(words)):
                hit = None if w in self.in_names else self._value_word(w)
                if hit is not None and len(words) > 1:
                    col, value = hit
                    equals = f"{{c}} = {lit(value)}"
                    words = words[:i] + words[i + 1 :]
                    got = self._measure("number of " + " ".join(words), depth=depth + 1)
                    if got is not None:
                        got.filter = (col, equals)
                        return _finish(got, label, joined)
            if not words:
                return _finish(Measure("COUNT", label="count"), label, joined)
            quantity = self._column(words, numeric=True, threshold=0.99)
            tables = self.vocab.tables_named(words) or self._tables_headed(words)
            if quantity is not None and not tables:
                # "number of shares" is a quantity column, not a count
                func = "SUM" if cue_word == "total" else "COUNT_COL"
                return _finish(Measure(func, col=quantity, label=rest), label, joined)
            if tables:
                func = "COUNT_DISTINCT" if distinct else "COUNT"
                return _finish(Measure(func, table=tables[0][0], label=rest), label, joined)
            partial = [
                t
                for t in self.catalog.tables
                if len(words) == 1
                and any(
                    word_match(words[0], p) >= 0.9
                    for name in self.vocab.table_names(t)
                    for p in name
                )
            ]
            if len(partial) == 1:
                # "transactions" -> wallet_transactions_daily, the one table it names a part of
                func = "COUNT_DISTINCT" if distinct else "COUNT"
                return _finish(Measure(func, table=partial[0], label=rest), label, joined)
            kind = self._value_word(words[0]) if len(words) == 1 else None
            if kind is not None:
                # "how many emails": rows whose kind is the stored value 'Email'
                col, value = kind
                counted = Measure("COUNT", table=col.table, label=rest)
                counted.filter = (col, f"{{c}} = {lit(value)}")
                return _finish(counted, label, joined)
            named = self._column(words)
            if named is not None:
                func = "COUNT_DISTINCT" if distinct else "COUNT_COL"
                return _finish(Measure(func, col=named, label=rest), label, joined)
            return self._defined(rest, depth, func) if depth < 2 else None
        if not words:
            return None
        condition: tuple[Col, str] | None = None
        for i, w in enumerate(words):
            hit = self._value_word(w) if len(words) > 1 else None
            if hit is not None and not self._column([w], numeric=True):
                condition = (hit[0], f"{{c}} = {lit(hit[1])}")
                words = words[:i] + words[i + 1 :]
                break
        named_table = self.vocab.tables_named(words) if func == "SUM" else []
        if named_table and _only_table(words, named_table, self.vocab):
            # "total payments received": how many rows, not a sum of some amount
            return _finish(Measure("COUNT", table=named_table[0][0], label=rest), label, joined)
        found = self._column([cue_word, *words], prefer, numeric=True, threshold=threshold)
        if found is None:
            found = self._table_measure(words)
        if found is None:
            defined = self._defined(rest, depth, func) if depth < 2 else None
            if defined is not None:
                return defined
            found = self._column(words)
            if (
                found is None
                or func not in ("MAX", "MIN")
                or not _is_temporal(found.column.data_type)
            ):
                if func == "SUM":
                    tables = self.vocab.tables_named(words)
                    if tables and len(words) == len(self.vocab.table_words[tables[0][0].qualified]):
                        return _finish(
                            Measure("COUNT", table=tables[0][0], label=rest), label, joined
                        )
                return None
        return _finish(Measure(func, col=found, label=rest, filter=condition), label, joined)

    def _elapsed(self, func: str, unit: str, first: str, second: str, label: str) -> Measure | None:
        """ "average number of days between the sale date and the payment date": the later
        date minus the earlier, in the unit asked for."""
        cols = []
        for phrase in (first, second):
            words = [stem(w) for w in re.findall(r"[a-z0-9]+", phrase) if w not in STOP_WORDS]
            col = None
            best = 0.0
            for candidate in self.vocab.columns:
                if not _is_temporal(candidate.column.data_type):
                    continue
                score = self.vocab.column_score(words, candidate)
                if score > best:
                    best, col = score, candidate
            if col is None or best < 0.5:
                return None
            cols.append(col)
        if func == "COUNT":
            func = "AVG"
        measure = Measure("ELAPSED", label=label, expr=[cols[0], cols[1], unit, func])
        measure.tables = (cols[0].table, cols[1].table)
        return measure

    def _table_measure(self, words: Sequence[str]) -> Col | None:
        """ "sales amount", "order value": the one quantity a table holds, when the words
        name the table and nothing more specific."""
        rest = [w for w in words if w not in ("amount", "value", "total", "sum")]
        if not rest or len(rest) == len(words):
            return None
        hits = self.vocab.tables_named(rest)
        if not hits or not _only_table(rest, hits, self.vocab):
            return None
        table = hits[0][0]
        quantities = [
            Col(table, c)
            for c in table.columns
            if _is_number(c.data_type) and not _is_key(Col(table, c))
        ]
        return quantities[0] if len(quantities) == 1 else None

    def _fits(self, specific: Measure, general: Measure) -> bool:
        """The specific measure's column answers the general phrase too."""
        if specific.col is None:
            return False
        words = [stem(w) for w in re.findall(r"[a-z0-9]+", general.label) if w not in STOP_WORDS]
        return self.vocab.column_score(words, specific.col) >= 0.5

    def _tables_headed(self, words: Sequence[str]) -> list[tuple[TableInfo, float]]:
        """Tables whose name starts with the words ("payments" -> payments_received)."""
        found = []
        for table in self.catalog.tables:
            parts = self.vocab.table_words[table.qualified]
            if len(parts) > len(words) and all(
                word_match(w, p) >= 0.9 for w, p in zip(words, parts, strict=False)
            ):
                found.append((table, len(words) / len(parts)))
        return found if len(found) == 1 else []

    def _defined(self, phrase: str, depth: int, func: str = "") -> Measure | None:
        """A term the glossary, the instructions or the question itself defines
        ("revenue refers to the sum of sale_price"): its definition, read as a measure."""
        words = {stem(w) for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w not in STOP_WORDS}
        if not words:
            return None
        for entry in self.glossary:
            for name in entry.names:
                names = {
                    stem(w) for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in STOP_WORDS
                }
                if names and names <= words:
                    if self._is_condition(entry):
                        continue  # a state ("open"), applied as a condition
                    formula = self._sql_measure(entry)
                    if formula is not None:
                        if entry.term not in self.applied:
                            self.applied.append(entry.term)
                        return formula
                    body = trim_definition(entry.definition or entry.expression).lower()
                    body = re.sub(r"\s+(?:in|from) the \w+ table$", "", body)
                    got = self._measure(body, depth=depth + 1)
                    if got is None and func and func != "COUNT":
                        got = self._measure(
                            f"{func.lower()} {body}".replace("avg ", "average "), depth=depth + 1
                        )
                    if got is not None:
                        if entry.term not in self.applied:
                            self.applied.append(entry.term)
                        return got
        return None

    def _sql_columns(self, tree: exp.Expr) -> dict[int, Col] | None:
        """Every column a definition's SQL names, resolved in the catalog (``table.column``
        or a column name only one table has); None when one does not resolve."""
        resolved: dict[int, Col] = {}
        for column in tree.find_all(exp.Column):
            name, table = column.name.lower(), column.table.lower()
            found = [
                c
                for c in self.vocab.columns
                if c.column.name.lower() == name and (not table or c.table.name.lower() == table)
            ]
            if len(found) != 1:
                return None
            resolved[id(column)] = found[0]
        return resolved

    def _sql_definition(self, entry: GlossaryEntry) -> tuple[exp.Expr, dict[int, Col]] | None:
        """A definition written in SQL ("SUM(cost) / NULLIF(SUM(clicks), 0)", "status =
        'active'"), parsed with sqlglot: no subqueries, only catalog columns."""
        cache = self.vocab.definitions
        if entry in cache:
            return cache[entry]
        if len(cache) >= _DEFINITIONS_MAX:
            cache.clear()
        cache[entry] = found = self._parse_definition(entry)
        return found

    def _parse_definition(self, entry: GlossaryEntry) -> tuple[exp.Expr, dict[int, Col]] | None:
        body = (entry.expression or entry.definition).strip().rstrip(";")
        if not body or (is_wordy(body) and not re.search(r"[()=<>]", body)):
            return None
        try:
            tree = sqlglot.parse_one(body, dialect="postgres")
        except sqlglot.errors.SqlglotError:
            return None  # prose, not SQL
        if tree.find(exp.Select, exp.Subquery) is not None or tree.find(exp.Column) is None:
            return None
        columns = self._sql_columns(tree)
        return (tree, columns) if columns is not None else None

    def _without_conditions(self, phrase: str) -> str:
        """The phrase less the terms defined as conditions ("open deals" -> "deals"): a
        condition narrows the rows, it names no column to show."""
        for entry in self.glossary:
            if self._is_condition(entry):
                for name in entry.names:
                    phrase = re.sub(rf"\b{re.escape(name.lower())}\b\s*", "", phrase)
        return phrase.strip()

    def _is_condition(self, entry: GlossaryEntry) -> bool:
        """Whether the entry defines a condition in SQL (``stage = 'won'``), not a value."""
        parsed = self._sql_definition(entry)
        return (
            parsed is not None
            and parsed[0].find(exp.AggFunc) is None
            and isinstance(parsed[0], exp.Predicate | exp.Not | exp.And | exp.Or | exp.Paren)
        )

    def _term_spans(self) -> list[tuple[int, int]]:
        """Where the question uses a term of an applied definition: its words are that
        term, not values or names of their own ("win rate" is not a 'Closed Won' filter)."""
        spans = []
        for entry in self.glossary:
            if entry.term not in self.applied:
                continue
            for name in entry.names:
                for m in re.finditer(rf"\b{re.escape(name)}\b", self.question, re.I):
                    spans.append((m.start(), m.end()))
        return spans

    def _sql_measure(self, entry: GlossaryEntry) -> Measure | None:
        parsed = self._sql_definition(entry)
        if parsed is None or parsed[0].find(exp.AggFunc) is None:
            return None
        tree, columns = parsed
        tables = tuple(dict.fromkeys(c.table for c in columns.values()))
        return Measure("SQLEXPR", label=entry.term, expr=[tree, columns], tables=tables)

    def _sql_conditions(self, plan: Plan) -> None:
        """Conditions the glossary defines in SQL ("active" = ``status = 'active'``), for
        the terms the question uses."""
        for entry in self.glossary:
            if not any(
                re.search(rf"\b{re.escape(name)}\b", self.question, re.I) for name in entry.names
            ):
                continue
            parsed = self._sql_definition(entry)
            if parsed is None or parsed[0].find(exp.AggFunc) is not None:
                continue
            tree, columns = parsed
            if not isinstance(tree, exp.Predicate | exp.Not | exp.And | exp.Or | exp.Paren):
                continue
            plan.raw.append((tree, columns))
            if entry.term not in self.applied:
                self.applied.append(entry.term)

    def _arith(self, low: str) -> Measure | None:
        """``A / B``, ``(A - (B + C)) / A * 100``: arithmetic over measure phrases and
        numbers, parsed with precedence; every phrase must link or the whole fails."""
        tokens = _arith_tokens(low)
        tables: list[TableInfo] = []
        position = 0

        def peek() -> str:
            return tokens[position] if position < len(tokens) else ""

        def factor() -> object | None:
            nonlocal position
            tok = peek()
            if tok == "(":
                position += 1
                inner = expr()
                if peek() != ")":
                    return None
                position += 1
                return inner
            if not tok or tok in ")+-*/":
                return None
            position += 1
            if re.fullmatch(r"\d+(\.\d+)?", tok):
                return ("num", tok)
            phrase = tok.strip()
            m = self._measure(phrase) or self._measure("total " + phrase)
            if m is None:
                return None
            for t in (m.table, m.col.table if m.col else None, *m.tables):
                if t is not None:
                    tables.append(t)
            return ("m", m)

        def term() -> object | None:
            nonlocal position
            left = factor()
            while left is not None and peek() in ("*", "/"):
                op = peek()
                position += 1
                right = factor()
                if right is None:
                    return None
                left = ("op", op, left, right)
            return left

        def expr() -> object | None:
            nonlocal position
            left = term()
            while left is not None and peek() in ("+", "-"):
                op = peek()
                position += 1
                right = term()
                if right is None:
                    return None
                left = ("op", op, left, right)
            return left

        tree = expr()
        if tree is None or position != len(tokens) or not tables:
            return None
        return Measure("EXPR", label=low, tables=tuple(tables), expr=[tree])

    # -- grouping, ordering, limits -------------------------------------------------------

    def _limit(self) -> tuple[int, bool | None]:
        low = self.low
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

    def _groups(self, plan: Plan) -> None:
        for m in re.finditer(
            r"\b(?:per|for each|for every|in each|each|by)\s+(?:of\s+the\s+)?([a-z][a-z0-9 ]*?)(?=[,.?;]|\s+(?:and|in|for|who|that|which|from|between|during|with|where|inclusive|excluding|including|not|over)\b|$)",
            self.low,
        ):
            phrase = m.group(1).strip()
            before = self.low[: m.start()].split()
            if (
                m.group(0).startswith("by")
                and before
                and (before[-1] in _PARTICIPLES or re.fullmatch(r"[a-z]{3,}ed", before[-1]))
            ):
                continue  # "made by customers" names who did it, not a grouping
            each_last = re.match(
                r"(?:last|past|previous)\s+(?:\d+\s+)?(?:calendar\s+)?(day|week|month|quarter|year)s?\b",
                phrase,
            )
            if each_last:
                phrase = each_last.group(1)
            if m.group(0).startswith("by") and plan.measures and self._measure(phrase) is not None:
                continue
            words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
            if not words:
                continue
            grain = _GRAINS.get(words[0]) if len(words) == 1 else None
            if grain:
                col = self._date_column(plan)
                if col is not None and not any(d.grain == grain for d in plan.dims):
                    plan.dims.insert(0, Dim(col, grain))
                continue
            if any(self.vocab.column_score(words, d.col) >= 0.5 for d in plan.dims):
                continue
            if not plan.measures:
                continue
            col = self._column(words)
            tables = self.vocab.tables_named(words)
            measured = {m.table.qualified for m in plan.measures if m.table is not None}
            measured |= {m.col.table.qualified for m in plan.measures if m.col is not None}
            if m.group(0).startswith("per") and tables and tables[0][0].qualified in measured:
                continue  # "amount per treatment" is a rate over the measured rows
            if tables and (col is None or _only_table(words, tables, self.vocab)):
                plan.entity = tables[0][0]
                for c in self._labels(tables[0][0]):
                    if not any(d.col.key == c.key for d in plan.dims):
                        plan.dims.append(Dim(c))
            elif col is not None:
                plan.dims.append(Dim(col))
        if plan.measures and plan.dims and plan.entity is None:
            # An entity named in the output ("salesperson ID, first name") groups by its key.
            owners = {d.col.table.qualified for d in plan.dims}
            for t in owners:
                table = self.catalog.table(t)
                if (
                    table
                    and table.primary_key
                    and any(
                        d.col.column.name == table.primary_key[0] and d.col.table.qualified == t
                        for d in plan.dims
                    )
                ):
                    plan.entity = table

    def _ordering(self, plan: Plan, desc: bool | None) -> None:
        low = self.low
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
        recency = _RECENCY.search(low)
        if not phrase and recency and plan.dims and not plan.measures:
            # "the 5 most recent activities": by the listed rows' own date
            col = self._date_column(Plan(dims=plan.dims))
            if col is not None:
                if not any(d.col.key == col.key for d in plan.dims):
                    plan.dims.append(Dim(col))
                index = next(i for i, d in enumerate(plan.dims) if d.col.key == col.key)
                newest = not re.match(r"oldest|earliest", recency.group(0))
                plan.order.append((f"d{index}", newest))
                self.known |= {stem(w) for w in recency.group(0).split()}
                return
        popular = re.search(r"\b(most|least)\s+(?:common|frequent(?:ly)?|popular|often)\b", low)
        if not phrase and popular:
            counts = [
                i for i, x in enumerate(plan.measures) if x.func in ("COUNT", "COUNT_DISTINCT")
            ]
            if not counts:
                plan.measures.append(Measure("COUNT", label="count"))
                counts = [len(plan.measures) - 1]
            plan.order.append((f"m{counts[0]}", popular.group(1) == "most"))
            return
        if not phrase and desc is not None:
            m = re.search(
                r"\b(?:most|least|highest|lowest|largest|smallest)\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|in|for|who|that|from|by|between)\b|$)",
                low,
            )
            phrase = m.group(1) if m else ""
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
            target = self._order_target(plan, phrase)
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
                second = self._measure(more.group(1).strip())
                if second is not None:
                    for i, existing in enumerate(plan.measures):
                        if _same_measure(existing, second) or _refines(existing, second):
                            plan.order.append((f"m{i}", plan.order[0][1]))
                            break

    def _order_target(self, plan: Plan, phrase: str) -> str:
        words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
        if re.search(r"[/*]|\s-\s", phrase):
            for i, existing in enumerate(plan.measures):
                if existing.func == "EXPR" and " ".join(existing.label.split()) == " ".join(
                    phrase.split()
                ):
                    return f"m{i}"
            made = self._arith(phrase)
            if made is None:
                return ""
            plan.measures.append(made)
            return f"m{len(plan.measures) - 1}"
        measure = self._measure(phrase)
        if measure is None and self.vocab.tables_named(words):
            measure = self._measure("number of " + phrase)
        if measure is None and not plan.measures:
            col = self._column(words, numeric=True)
            if col is not None and self._many_of(col.table, plan):
                # "top 5 reps by won amount": each rep's deals summed
                plan.measures.append(Measure("SUM", col=col, label=phrase))
                return f"m{len(plan.measures) - 1}"
            if col is not None:
                plan.dims.append(Dim(col))
                return f"d{len(plan.dims) - 1}"
            measure = self._measure("number of " + phrase)
        if measure is not None:
            for i, m in enumerate(plan.measures):
                if _same_measure(m, measure):
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
            if self.vocab.column_score(words, d.col) >= 0.5:
                return f"d{i}"
        col = self._column(words, numeric=True)
        if col is not None and plan.measures:
            plan.measures.append(Measure("SUM", col=col, label=phrase))
            return f"m{len(plan.measures) - 1}"
        if col is not None:
            plan.dims.append(Dim(col))
            return f"d{len(plan.dims) - 1}"
        return ""

    def _many_of(self, table: TableInfo, plan: Plan) -> bool:
        """Whether ``table`` holds many rows per row of the table the listing shows (a
        reference from it to that table), so its numbers must be summed per listed row."""
        shown = {d.col.table.qualified for d in plan.dims}
        if len(shown) != 1 or table.qualified in shown:
            return False
        (entity,) = shown
        path = self.graph.path(table.qualified, entity)
        if not path:
            return False
        here = table.qualified
        for edge in path:
            if edge.child != here:
                return False
            here = edge.parent
        return True

    def _date_column(self, plan: Plan, near: str = "") -> Col | None:
        tables = self._fact_candidates(plan)
        tables += [t for t in self.named if t not in tables]
        near_words = [stem(w) for w in re.findall(r"[a-z]+", near) if w not in STOP_WORDS]
        state_words = self._state_words()
        best: tuple[float, Col] | None = None
        for rank, table in enumerate(tables):
            for index, column in enumerate(table.columns):
                if not _is_temporal(column.data_type):
                    continue
                col = Col(table, column)
                score = -0.3 * rank - index * 0.01
                if column.nullable:
                    score -= 0.25  # a date set only in some state ("closed_at") is no timeline
                if near_words:
                    score += 3 * self.vocab.column_score(near_words, col)
                if state_words:
                    # "won in 2024" with stage 'Closed Won': the date of closing
                    score += self.vocab.column_score(state_words, col)
                if best is None or score > best[0]:
                    best = (score, col)
        return best[1] if best else None

    def _state_words(self) -> list[str]:
        """The words of the multi-word stored values the question names by one of their
        words ("won" -> closed, won): they say which of several dates the question means."""
        found: list[str] = []
        for tok in tokenize(self.question):
            if tok.quoted or len(tok.low) < 3:
                continue
            for _, value in set(self.vocab.value_words.get(lemma(tok.low), [])):
                found += [stem(w) for w in re.findall(r"[a-z]+", value.lower())]
        return found

    def _fact_candidates(self, plan: Plan) -> list[TableInfo]:
        out: list[TableInfo] = []
        for m in plan.measures:
            for t in [m.col.table if m.col else None, m.table, *m.tables]:
                if t is not None and t not in out:
                    out.append(t)
        for d in plan.dims:
            if d.col.table not in out:
                out.append(d.col.table)
        if not out:
            out = list(self.catalog.tables)
        return out

    # -- conditions ---------------------------------------------------------------------

    def _conditions(self, plan: Plan, text: str, toks: list[Tok]) -> None:
        low = self.low
        used: set[str] = set()
        for measure in plan.measures:
            for inner in _measures_in(measure):
                if inner.filter is not None:
                    used |= {v.lower() for v in re.findall(r"'((?:[^']|'')*)'", inner.filter[1])}
        self._date_filters(plan)
        # anti-joins: "who have not made any transactions", "that do not have any X", "no X"
        for m in re.finditer(
            r"\b(?:not|never)\s+(?:\w+\s+){0,3}?(?:any|a)\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in|with|based)\b|$)|\bhave no\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in)\b|$)|\bwithout (?:any\s+)?([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in)\b|$)",
            low,
        ):
            phrase = next(g for g in m.groups() if g)
            words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
            hits = self.vocab.tables_named(words) or self.vocab.tables_named(words[-1:])
            if hits:
                plan.anti.append(hits[0][0])
        # "products that have never been ordered": the verb names the related table
        for m in re.finditer(r"\b(?:not|never)\s+(?:been\s+|be\s+)?([a-z]{3,}?)(?:ed|d)\b", low):
            hits = self.vocab.tables_named([stem(m.group(1))]) or self.vocab.tables_named(
                [stem(m.group(1) + "e")]
            )
            if hits and hits[0][0] not in plan.anti:
                plan.anti.append(hits[0][0])
        used |= self._patterns(plan)
        self._key_literals(plan)
        spans = self._term_spans()
        used |= self._proper_names(plan, toks, used, spans)
        # quoted and stored values
        for tok in toks:
            if tok.low in used or any(a <= tok.start < b for a, b in spans):
                continue
            found = self._value(tok, toks, plan)
            if found is not None:
                plan.filters.append(found)
                used.add(tok.low)
        self._comparisons(plan)
        self._sql_conditions(plan)
        self._flags(plan)
        self._documented_states(plan, self._term_spans())
        if not plan.measures:
            for col, cond in plan.filters:
                numeric = _is_number(col.column.data_type)
                if (
                    numeric
                    and re.match(r"\{c\} [<>]", cond)
                    and not any(d.col.key == col.key for d in plan.dims)
                ):
                    plan.dims.append(Dim(col))  # a listing shows what it was filtered on
        self._matching_rules(plan)
        self._null_rules(plan)

    def _flags(self, plan: Plan) -> None:
        """Boolean columns the question names ("primary contacts" -> primary_contact,
        "inactive" / "not active" -> NOT active)."""
        tables = [*self._fact_candidates(plan), *self.named]
        toks = tokenize(self.question)
        for table in dict.fromkeys(tables):
            own = {p for name in self.vocab.table_names(table) for p in name}
            for column in table.columns:
                if column.data_type != "boolean":
                    continue
                col = Col(table, column)
                parts = [p for p in self.vocab.column_words[col.key] if p not in own and p != "is"]
                if not parts:
                    continue
                for i in range(len(toks)):
                    if not all(
                        any(word_match(t.stem, p) >= 0.9 for t in toks[i : i + len(parts)])
                        for p in parts
                    ):
                        continue
                    before = " ".join(t.low for t in toks[max(0, i - 2) : i])
                    negated = bool(re.search(r"\b(?:not|non|no|never)$", before))
                    if any(f[0].key == col.key for f in plan.filters):
                        break
                    plan.filters.append((col, "NOT {c}" if negated else "{c}"))
                    break

    def _documented_states(self, plan: Plan, spans: list[tuple[int, int]]) -> None:
        """States the schema's comments define: a flag "False when the product is
        discontinued", a date "When the account was archived (churned); NULL for active
        accounts". The question's word for the state becomes the condition."""
        tables = [*self._fact_candidates(plan), *self.named]
        toks = [
            t
            for t in tokenize(self.question)
            if not t.quoted and not any(a <= t.start < b for a, b in spans)
        ]
        filtered = {c.key for c, _ in plan.filters}
        for table in dict.fromkeys(tables):
            own = {p for name in self.vocab.table_names(table) for p in name}
            for column in table.columns:
                col = Col(table, column)
                if col.key in filtered:
                    continue
                for state_words, state in column_states(column):
                    words = [w for w in state_words if w not in own]
                    hit = next(
                        (
                            i
                            for i, t in enumerate(toks)
                            if any(lemma(t.low) == lemma(w) or t.stem == stem(w) for w in words)
                        ),
                        None,
                    )
                    if hit is None:
                        continue
                    before = " ".join(t.low for t in toks[max(0, hit - 3) : hit])
                    negated = re.search(
                        r"\b(?:not|non|no|never)(?:\s+(?:been|be|being|yet))?$", before
                    )
                    plan.filters.append((col, negate_state(state) if negated else state))
                    filtered.add(col.key)
                    self.known.add(toks[hit].stem)
                    self.known.add(toks[hit].low)
                    break

    def _null_rules(self, plan: Plan) -> None:
        """ "only include rows with non-null X for both": the measured columns must be
        present."""
        if not re.search(r"\bnon[- ]?null\b|\bnot null\b", self.instructions, re.I):
            return
        seen: set[tuple[str, str]] = set()

        def columns(node: object) -> None:
            if isinstance(node, tuple) and node and node[0] == "m" and isinstance(node[1], Measure):
                measure = node[1]
                if measure.col is not None and measure.col.key not in seen:
                    seen.add(measure.col.key)
                    plan.filters.append((measure.col, "{c} IS NOT NULL"))
            elif isinstance(node, tuple) and node and node[0] == "op":
                columns(node[2])
                columns(node[3])

        for m in plan.measures:
            for node in m.expr:
                columns(node)

    def _matching_rules(self, plan: Plan) -> None:
        """Instructions that say how to compare text ("country should be matched
        case-insensitively", "category ... with wildcards") turn equality on the columns
        they name into ILIKE: exact but case-blind, or a substring with wildcards."""
        for sentence in re.split(r"(?<=[.;])\s+|\n+", self.instructions):
            low = sentence.lower()
            wildcard = bool(re.search(r"wildcard|partial match|like '%", low))
            blind = wildcard or bool(re.search(r"case[- ]?insensitiv", low))
            if not blind:
                continue
            named: set[tuple[str, str]] = set()
            head = re.split(
                r"\b(?:should|must|are|is|to be|match|matched)\b", sentence, maxsplit=1
            )[0]
            for phrase in re.split(r",|\band\b|\bor\b|\bwhen using\b", head, flags=re.I):
                col = self._text_column(phrase)
                if col is not None:
                    named.add(col.key)
            for ref in re.findall(r"\b(\w+)\.(\w+)\b", sentence):
                for col in self.vocab.columns:
                    if col.table.name == ref[0].lower() and col.column.name == ref[1].lower():
                        named.add(col.key)
            for i, (col, cond) in enumerate(plan.filters):
                m = re.fullmatch(r"\{c\} = '((?:[^']|'')*)'", cond)
                if m and col.key in named:
                    value = _like(m.group(1).replace("''", "'"))
                    shape = f"%{value}%" if wildcard else value
                    plan.filters[i] = (col, f"{{c}} ILIKE {lit(shape)}")

    def _patterns(self, plan: Plan) -> set[str]:
        """Text patterns: "name starts with 'J'", "last name contains 'son'", "state ending
        with the letter 'a'", "'Ford' in their make name", "a .com email address". Matched
        case-insensitively (ILIKE); conditions joined by "or" in the question are OR-ed."""
        q = self.question
        conds: list[tuple[int, int, Col, str]] = []
        used: set[str] = set()
        literal = r"(?:the\s+(?:letter|letters|string|text|word)\s+)?(?:'([^']+)'|\"([^\"]+)\"|([^\s,?'\"]+))"
        cues = [
            (r"\b(?:starts?|starting|begins?|beginning)\s+with\s+", "{v}%"),
            (r"\b(?:ends?|ending)\s+(?:with|in)\s+", "%{v}"),
            (r"\b(?:contains?|containing)\s+", "%{v}%"),
        ]
        found: list[tuple[int, int, str]] = []
        for cue, shape in cues:
            for m in re.finditer(cue + literal, q, re.I):
                value = (m.group(1) or m.group(2) or m.group(3) or "").strip()
                if value:
                    found.append((m.start(), m.end(), shape.format(v=_like(value))))
                    used.add(value.lower())
        found.sort()
        previous: Col | None = None
        last_end = 0
        for start, end, pattern in found:
            subject = q[max(last_end, start - 45) : start]
            subject = re.split(r"\b(?:or|and)\b", subject)[-1]
            col = self._text_column(subject) or previous
            last_end = end
            if col is None:
                continue
            previous = col
            conds.append((start, end, col, f"{{c}} ILIKE {lit(pattern)}"))
        for m in re.finditer(
            r"['\"]([^'\"]+)['\"]\s+in\s+(?:the|their|its|his|her)\s+([A-Za-z_][\w ]{0,30}?)(?=[,.?;]|\s+(?:or|and)\b|$)",
            q,
            re.I,
        ):
            col = self._text_column(m.group(2))
            if col is not None:
                conds.append(
                    (m.start(), m.end(), col, f"{{c}} ILIKE {lit('%' + _like(m.group(1)) + '%')}")
                )
                used.add(m.group(1).lower())
        for m in re.finditer(
            r"\b(?:a|an|with)\s+(\.[a-z]{2,6})\s+([a-z_][\w ]{0,30}?)(?=[,.?;]|\s+(?:or|and|who|that|bought|have)\b|$)",
            q,
            re.I,
        ):
            col = self._text_column(m.group(2))
            if col is not None:
                conds.append(
                    (m.start(), m.end(), col, f"{{c}} ILIKE {lit('%' + _like(m.group(1)))}")
                )
                used.add(m.group(1).lower().lstrip("."))
        if not conds:
            return used
        conds.sort(key=lambda c: c[0])
        groups: list[list[tuple[int, int, Col, str]]] = [[conds[0]]]
        for prev, cur in itertools.pairwise(conds):
            between = q[prev[1] : cur[0]].lower()
            if re.search(r"\bor\b", between) and not re.search(r"\band\b", between):
                groups[-1].append(cur)
            else:
                groups.append([cur])
        for group in groups:
            if len(group) == 1:
                plan.filters.append((group[0][2], group[0][3]))
            else:
                plan.ors.append([(c[2], c[3]) for c in group])
        return used

    def _text_column(self, phrase: str) -> Col | None:
        words = [stem(w) for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w not in STOP_WORDS]
        words = [w for w in words if w not in ("whose", "letter", "their", "its")][-3:]
        if not words:
            return None
        best: tuple[float, Col] | None = None
        named = {t.qualified for t in self.named}
        for col in self.vocab.columns:
            if _is_number(col.column.data_type) or _is_temporal(col.column.data_type):
                continue
            raw = self.vocab.column_score(words, col)
            if raw < 0.5:
                continue
            score = raw + (0.3 if col.table.qualified in named else 0.0)
            if best is None or score > best[0]:
                best = (score, col)
        return best[1] if best else None

    def _key_literals(self, plan: Plan) -> None:
        """ "merchant with ID 1", "customer id 42": the named table's key equals the number."""
        for m in re.finditer(
            r"\b([a-z]+)\s+(?:with\s+)?(?:the\s+)?id\s+(?:of\s+)?(\d+)\b", self.low
        ):
            hits = self.vocab.tables_named([stem(m.group(1))])
            if not hits or len(hits[0][0].primary_key) != 1:
                continue
            table = hits[0][0]
            key = table.column(table.primary_key[0])
            if key is not None:
                plan.filters.append((Col(table, key), f"{{c}} = {int(m.group(2))}"))

    def _value_word(self, word: str) -> tuple[Col, str] | None:
        """A stored value the word names ("successful" -> status 'success')."""
        found = self.vocab.values.get(word)
        if not found and len(word) >= 5:
            for value, cols in self.vocab.values.items():
                if len(value) >= 4 and word.startswith(value) and len(word) - len(value) <= 3:
                    found = cols
                    break
        if not found:
            return None
        return found[0]

    def _semi(self, plan: Plan, cond_text: str) -> None:
        """Tables a listing's conditions name ("customers who made a purchase, based on
        joining the customers and sales tables") restrict it to rows that join them."""
        if plan.measures or not plan.dims:
            return
        in_plan = {d.col.table.qualified for d in plan.dims} | {
            c.table.qualified for c, _ in plan.filters
        }
        anti = {t.qualified for t in plan.anti}
        toks = tokenize(cond_text)
        for table in self._named_tables(toks):
            if table.qualified not in in_plan and table.qualified not in anti:
                plan.semi.append(table)

    def _value(self, tok: Tok, toks: list[Tok], plan: Plan) -> tuple[Col, str] | None:
        shouted = tok.text.isupper() and len(tok.text) >= 2
        if not tok.quoted and not shouted and (tok.low in STOP_WORDS or len(tok.low) < 2):
            return None
        candidates = list(self.vocab.values.get(tok.low, []))
        if not candidates and not tok.quoted and tok.text[:-1].isupper() and tok.low[-1:] == "s":
            candidates = list(self.vocab.values.get(tok.low[:-1], []))  # "CTOs" -> 'CTO'
        if not candidates and not tok.quoted and len(tok.low) >= 5:
            for value, cols in self.vocab.values.items():
                if len(value) >= 4 and tok.low.startswith(value) and len(tok.low) - len(value) <= 3:
                    candidates.extend(cols)
        if not candidates and not tok.quoted and len(tok.low) >= 3:
            return self._value_inside(tok)
        if not candidates:
            if tok.quoted:
                col = self._text_column_near(tok, toks, plan)
                if col is not None:
                    return col, f"{{c}} = {lit(tok.text)}"
            return None
        # the noun after the value, or before it, names the table or column
        context = [t.stem for t in toks if abs(t.start - tok.start) < 40 and t is not tok]
        index = toks.index(tok)
        following = [t.stem for t in toks[index + 1 : index + 3] if not t.quoted]
        tables = self._fact_candidates(plan)

        def score(pair: tuple[Col, str]) -> float:
            col, _ = pair
            s = self.vocab.column_score(context, col) + self.vocab.table_score(context, col.table)
            s += 1.5 * max((self.vocab.table_score([w], col.table) for w in following), default=0)
            if col.table in tables:
                s += 0.5
            return s

        col, value = max(candidates, key=score)
        names_something = self._names_something(tok.stem)
        # one value in one table (a code and a name column may both hold 'EMEA')
        unique = (
            len({c.table.qualified for c, _ in candidates}) == 1
            and len({v.lower() for _, v in candidates}) == 1
            and (len(tok.low) >= 4 or tok.text.isupper())
            and not names_something
        )
        if not tok.quoted and not unique and score((col, value)) < 0.5 and col.table not in tables:
            return None
        return col, f"{{c}} = {lit(value)}"

    def _proper_names(
        self, plan: Plan, toks: list[Tok], seen: set[str], spans: list[tuple[int, int]]
    ) -> set[str]:
        """Names the value index holds ("contacts at Cobalt Academy"): the longest run of
        words equal to one stored value, capitalised or quoted when it is a single word
        (a lower-case word is more likely a word than a name). Returns the words used."""
        used: set[str] = set()
        taken: set[int] = set()
        for i, col, value, size in self._called(toks):
            # "companies named Acme GmbH": the name column of the table just named, even
            # for a name the value index has not seen yet (a row added since it loaded)
            plan.filters.append((col, f"{{c}} = {lit(value)}"))
            taken |= {i + k for k in range(size)}
            used |= {t.low for t in toks[i - 1 : i + size]}  # the cue word too
        if not self.vocab.names:
            return used
        for size in (4, 3, 2, 1):
            for i in range(len(toks) - size + 1):
                window = toks[i : i + size]
                if any(i + k in taken for k in range(size)) or any(
                    t.low in seen or any(a <= t.start < b for a, b in spans) for t in window
                ):
                    continue
                if size == 1:
                    tok = window[0]
                    if not (tok.quoted or (i > 0 and tok.text[:1].isupper())):
                        continue
                phrase = " ".join(t.low for t in window)
                found = self.vocab.names.get(phrase)
                if not found:
                    continue
                tables = {c.table.qualified for c, _ in found}
                if len(tables) > 1:
                    named = [c for c, _ in found if c.table in self.named]
                    if len({c.table.qualified for c in named}) != 1:
                        continue
                    found = [(c, v) for c, v in found if c.table in self.named]
                col, value = found[0]
                plan.filters.append((col, f"{{c}} = {lit(value)}"))
                taken |= {i + k for k in range(size)}
                used |= {t.low for t in window}
        return used

    def _called(self, toks: list[Tok]) -> list[tuple[int, Col, str, int]]:
        """Values the question introduces as a name ("named Acme GmbH", "called 'Blue
        Fox'"): (first token, the name column of the table named before, value, tokens)."""
        found = []
        for i, tok in enumerate(toks[:-1]):
            if tok.low not in ("named", "called", "titled"):
                continue
            run = [toks[i + 1]]
            if not run[0].quoted:
                if not run[0].text[:1].isupper():
                    continue
                for nxt in toks[i + 2 :]:
                    gap = self.question[run[-1].end : nxt.start]
                    if gap.strip() or not nxt.text[:1].isupper():
                        break
                    run.append(nxt)
            before = [t for t in self.named if self._mentioned_before(t, tok.start)]
            if not before:
                continue
            table = before[-1]
            column = next(
                (
                    c.column
                    for c in self._labels(table)
                    if not _is_key(c) and not _is_number(c.column.data_type)
                ),
                None,
            )
            if column is None:
                continue
            value = self.question[run[0].start : run[-1].end].strip("'\"")
            found.append((i + 1, Col(table, column), value, len(run)))
        return found

    def _mentioned_before(self, table: TableInfo, at: int) -> bool:
        words = [stem(t.low) for t in tokenize(self.question[:at]) if not t.quoted]
        return any(
            self.vocab.table_score(words[j : j + len(n) + 1], table) >= 0.99
            for n in self.vocab.table_names(table)
            for j in range(len(words))
        )

    def _value_inside(self, tok: Tok) -> tuple[Col, str] | None:
        """A word found in exactly one multi-word stored value, and naming nothing else
        in the schema ("deals won" -> stage 'Closed Won')."""
        inside = set(self.vocab.value_words.get(lemma(tok.low), []))
        if len(inside) != 1 or tok.low in GRAMMAR_WORDS or tok.stem in GRAMMAR_WORDS:
            return None
        if self._names_something(tok.stem) and not self._verb_not_name(tok):
            return None
        col, value = next(iter(inside))
        return col, f"{{c}} = {lit(value)}"

    def _verb_not_name(self, tok: Tok) -> bool:
        """A verb form ("were lost") that is only part of a longer name ("lost_reason")
        and not followed by that name's other words is the state, not the column."""
        if lemma(tok.low) == tok.low or (lemma(tok.low) == tok.stem and tok.low == tok.stem):
            return False
        toks = tokenize(self.question)
        after = [t.stem for t in toks if t.start > tok.start][:2]
        for parts in [*self.vocab.table_words.values(), *self.vocab.column_words.values()]:
            if any(word_match(tok.stem, p) >= 0.9 for p in parts):
                rest = [p for p in parts if word_match(tok.stem, p) < 0.9]
                if not rest or any(word_match(a, p) >= 0.9 for a in after for p in rest):
                    return False
        return True

    def _names_something(self, word: str) -> bool:
        """Whether the word is (a form of) a part of any table or column name."""
        return any(
            word_match(word, p) >= 0.9
            for parts in [
                *self.vocab.table_words.values(),
                *self.vocab.column_words.values(),
                *(a for aliases in self.vocab.table_aliases.values() for a in aliases),
                *(a for aliases in self.vocab.column_aliases.values() for a in aliases),
            ]
            for p in parts
        )

    def _text_column_near(self, tok: Tok, toks: list[Tok], plan: Plan) -> Col | None:
        index = toks.index(tok)
        window = [
            t.stem
            for t in toks[max(0, index - 4) : index + 4]
            if not t.quoted and t.low not in STOP_WORDS
        ]
        best: tuple[float, Col] | None = None
        for col in self.vocab.columns:
            if _is_number(col.column.data_type) or _is_temporal(col.column.data_type):
                continue
            s = self.vocab.column_score(window, col)
            if s > 0.5 and (best is None or s > best[0]):
                best = (s, col)
        return best[1] if best else None

    def _comparisons(self, plan: Plan) -> None:
        ops = {
            "over": ">",
            "above": ">",
            "greater than": ">",
            "more than": ">",
            "exceeding": ">",
            "under": "<",
            "below": "<",
            "less than": "<",
            "fewer than": "<",
            "at least": ">=",
            "at most": "<=",
            "exactly": "=",
        }
        # "customers with at least 5 transactions": a count of related rows (HAVING)
        for m in re.finditer(
            r"\b(more than|over|at least|fewer than|less than|under|at most|exactly)\s+(\d+)\s+(?:total\s+|distinct\s+|different\s+)?([a-z]+(?:\s[a-z]+)?)",
            self.low,
        ):
            words = [stem(w) for w in m.group(3).split() if w not in STOP_WORDS]
            hits = self.vocab.tables_named(words) or self.vocab.tables_named(words[:1])
            if not hits:
                continue
            counted = Measure("COUNT", table=hits[0][0], label=m.group(3))
            plan.having.append((counted, ops[m.group(1)], int(m.group(2))))
        for m in re.finditer(
            r"\b([a-z][a-z ]*?)\s+(over|above|greater than|more than|exceeding|under|below|less than|at least|at most)\s+\$?([\d,]+(?:\.\d+)?)",
            self.low,
        ):
            words = [stem(w) for w in m.group(1).split() if w not in STOP_WORDS][-3:]
            col = self._column(words, numeric=True) if words else None
            if col is None or _is_key(col):
                continue
            plan.filters.append((col, f"{{c}} {ops[m.group(2)]} {m.group(3).replace(',', '')}"))
        # "contacts without an email", "with no phone": the column is empty (only when asked)
        for m in re.finditer(
            r"\b(?:without|with no|missing|lacking)\s+(?:a|an|any)?\s*([a-z]+(?:\s[a-z]+)?)",
            self.low,
        ):
            words = [stem(w) for w in m.group(1).split() if w not in STOP_WORDS]
            if not words or self.vocab.tables_named(words):
                continue  # a related table: an anti-join, handled with the conditions
            col = self._column(words)
            if col is not None and not _is_key(col):
                plan.filters.append((col, "{c} IS NULL"))
        for m in re.finditer(r"\b(before|after|since|until|prior to)\s+(\d{4})\b(?!-)", self.low):
            year = int(m.group(2))
            if not 1900 <= year <= 2200:
                continue
            col = self._date_column(plan, near=self.low[max(0, m.start() - 40) : m.start()])
            if col is None:
                continue
            bound = {"before": "<", "until": "<", "prior to": "<", "after": ">=", "since": ">="}[
                m.group(1)
            ]
            first = year + 1 if m.group(1) == "after" else year
            plan.filters.append((col, f"{{c}} {bound} {lit(f'{first}-01-01')}"))

    def _date_filters(self, plan: Plan) -> None:
        low = self.low
        windows: list[tuple[str, str, int]] = []  # (lower bound expr, upper bound expr, at)
        today = self.today

        def day(d: date) -> str:
            return lit(d.isoformat())

        for m in re.finditer(
            r"\b(?:in the |over the |during the |within the )?(?:past|last)\s+(\d+)\s+(calendar\s+)?(day|week|month|quarter|year)s?\b",
            low,
        ):
            n, unit = int(m.group(1)), m.group(3)
            if unit == "day" and re.match(r"[^.?]{0,12}inclusive of today", low[m.end() :]):
                n -= 1  # today is one of the n days
            lower = _shift(today, unit, -n)
            if m.group(2):
                lower = _truncate(lower, unit)
            upper = ""
            if re.match(
                r"[^.?]{0,30}\b(?:excluding|not including|exclusive of) (?:the )?current",
                low[m.end() :],
            ):
                lower = _shift(_truncate(today, unit), unit, -n)
                upper = day(_truncate(today, unit))
            windows.append((day(lower), upper, m.start()))
        for m in re.finditer(
            r"\b(?:in the |over the |during the )?(past|last|previous|this|current|next)\s+(week|month|quarter|year)\b",
            low,
        ):
            which, unit = m.group(1), m.group(2)
            start = _truncate(today, unit)
            if which == "past":
                windows.append((day(_shift(today, unit, -1)), "", m.start()))
            elif which == "next":
                windows.append(
                    (day(_shift(start, unit, 1)), day(_shift(start, unit, 2)), m.start())
                )
            elif which in ("this", "current"):
                if re.search(
                    r"(excluding|not including|exclusive of)\s*(the\s*)?$",
                    low[max(0, m.start() - 25) : m.start()],
                ):
                    continue
                windows.append((day(start), day(_shift(start, unit, 1)), m.start()))
            else:
                windows.append((day(_shift(start, unit, -1)), day(start), m.start()))
        for m in re.finditer(r"\b([a-z]{3,9})\s+(?:of\s+)?(\d{4})\b", low):
            month = _MONTHS.get(m.group(1))
            if month and not re.match(r"\s*\d", low[m.end() :]):
                first = date(int(m.group(2)), month, 1)
                windows.append((day(first), day(_shift(first, "month", 1)), m.start()))
        dates = list(_explicit_dates(low))
        between = re.search(
            r"\bbetween\s+(.+?)\s+and\s+(.+?)(?=[,?;(]|$| inclusive| exclusive)", low
        )
        if between and len(dates) >= 2:
            start, end = dates[0][0], dates[1][0]
            windows.append(
                (
                    lit(start.isoformat()),
                    lit((end + timedelta(days=1)).isoformat()),
                    between.start(),
                )
            )
            dates = dates[2:]
        for d, at, _ in dates:
            word = low[max(0, at - 25) : at]
            if re.search(r"(on or after|from|since|after|starting)\s*$", word):
                windows.append(
                    (
                        lit(d.isoformat())
                        if "after" not in word or "on or" in word
                        else lit((d + timedelta(days=1)).isoformat()),
                        "",
                        at,
                    )
                )
            elif re.search(r"(before|until|prior to)\s*$", word):
                windows.append(("", lit(d.isoformat()), at))
            elif re.search(r"(on or before|up to|through)\s*$", word):
                windows.append(("", lit((d + timedelta(days=1)).isoformat()), at))
            else:
                windows.append((lit(d.isoformat()), lit((d + timedelta(days=1)).isoformat()), at))
        for m in re.finditer(r"\b(?:in|during|for|of)\s+(?:the\s+year\s+)?(\d{4})\b", low):
            year = int(m.group(1))
            if 1900 <= year <= 2200 and not any(abs(w[2] - m.start()) < 30 for w in windows):
                windows.append((lit(f"{year}-01-01"), lit(f"{year + 1}-01-01"), m.start()))
        quarter = re.search(
            r"\b(first|second|third|fourth|q[1-4])\s+quarter\s+of\s+(\d{4})|\bq([1-4])\s+(\d{4})",
            low,
        )
        if quarter:
            qn = {"first": 1, "second": 2, "third": 3, "fourth": 4}.get(
                quarter.group(1) or "", 0
            ) or int((quarter.group(1) or quarter.group(3) or "q1")[-1])
            year = int(quarter.group(2) or quarter.group(4))
            start = date(year, 3 * qn - 2, 1)
            end = date(year + (1 if qn == 4 else 0), 1 if qn == 4 else 3 * qn + 1, 1)
            windows = [w for w in windows if abs(w[2] - quarter.start()) > 40]
            windows.append((lit(start.isoformat()), lit(end.isoformat()), quarter.start()))
        if not windows:
            return
        for low_bound, high_bound, at in windows:
            col = self._date_column(plan, near=low[max(0, at - 40) : at])
            if col is None:
                raise LinkError("the question names a time window but no date column is in scope")
            cond = []
            if low_bound:
                cond.append(f"{{c}} >= {low_bound}")
            if high_bound:
                cond.append(f"{{c}} < {high_bound}")
            plan.filters.append((col, " AND ".join(cond)))

    # -- composition ----------------------------------------------------------------------

    def _compose(self, plan: Plan) -> Linked:
        tables: list[TableInfo] = []

        def need(t: TableInfo | None) -> None:
            if t is not None and t not in tables:
                tables.append(t)

        counted = [
            m.table for m in plan.measures if m.func in ("COUNT", "COUNT_DISTINCT") and m.table
        ]
        counted += [h[0].table for h in plan.having if h[0].table is not None]
        if plan.having and plan.entity is None and plan.dims and plan.dims[0].col.table.primary_key:
            plan.entity = plan.dims[0].col.table
        for m in plan.measures:
            need(m.col.table if m.col else None)
            need(m.filter[0].table if m.filter else None)
            for t in m.tables:
                need(t)
        base = self._base(plan, counted)
        keep_all = self._keeps_all(plan, base)
        if keep_all and plan.entity is not None:
            base = plan.entity
        self.left = keep_all
        ordered = [base] + [t for t in tables if t is not base]
        for d in plan.dims:
            if d.col.table not in ordered:
                ordered.append(d.col.table)
        raw_cols = [c for _, cols in plan.raw for c in cols.values()]
        for c in [*(f[0] for f in plan.filters), *(p[0] for g in plan.ors for p in g), *raw_cols]:
            if c.table not in ordered:
                ordered.append(c.table)
        for t in counted:
            if t is not None and t not in ordered and not self._count_key(base, t):
                ordered.append(t)
        for t in plan.semi:
            if t not in ordered:
                ordered.append(t)
                plan.distinct = True
        joins = self.graph.tree(base.qualified, [t.qualified for t in ordered[1:]])
        if joins is None:
            raise LinkError("no join path connects the tables the question names")
        alias: dict[str, str] = {base.qualified: "t0"}
        from_sql = f"{_table_sql(base)} AS t0"
        for i, (name, edge) in enumerate(joins, 1):
            table = self.catalog.table(name)
            assert table is not None
            alias[name] = f"t{i}"
            prev = edge.other(name)
            kind = "LEFT JOIN" if keep_all else "JOIN"
            from_sql += (
                f" {kind} {_table_sql(table)} AS t{i} ON t{i}.{q(edge.column_of(name))} = "
                f"{alias[prev]}.{q(edge.column_of(prev))}"
            )

        def ref(c: Col) -> str:
            return f"{alias[c.table.qualified]}.{q(c.column.name)}"

        select: list[str] = []
        group: list[str] = []
        for i, d in enumerate(plan.dims):
            expr = ref(d.col)
            if d.grain:
                expr = f"DATE_TRUNC({lit(d.grain)}, {expr})"
            select.append(f"{expr} AS {_slot(f'd{i}')}")
            group.append(expr)
        grouped = bool(plan.measures or plan.having)
        if plan.entity is not None and grouped and plan.entity.primary_key:
            key = f"{alias.get(plan.entity.qualified, 't0')}.{q(plan.entity.primary_key[0])}"
            if plan.entity.qualified in alias and key not in group:
                group.append(key)
        places = re.search(r"\brounded?\s+(?:off\s+)?to\s+(\d)\s+decimal(?:\s+places?)?", self.low)
        for i, m in enumerate(plan.measures):
            text = self._measure_sql(m, base, alias, ref)
            if places and m.func not in ("RANK", "COUNT", "COUNT_DISTINCT", "COUNT_COL"):
                text = f"ROUND(CAST({text} AS NUMERIC), {int(places.group(1))})"
                self.known |= {"rounded", "round", "decimal", "places", "place"}
            select.append(f"{text} AS {_slot(f'm{i}')}")
        where: list[str] = []
        for c, cond in plan.filters:
            text = cond.replace("{c}", ref(c))
            if text not in where:
                where.append(text)
        for alternatives in plan.ors:
            where.append(
                " OR ".join(f"({cond.replace('{c}', ref(c))})" for c, cond in alternatives)
            )
        for tree, columns in plan.raw:
            where.append(self._render_sql(tree, columns, alias))
        for t in plan.anti:
            if t.qualified == base.qualified:
                continue
            path = self.graph.path(base.qualified, t.qualified)
            if not path or len(path) != 1:
                raise LinkError(f"no direct key links {base.name} and {t.name}")
            edge = path[0]
            where.append(
                f"NOT EXISTS (SELECT 1 FROM {_table_sql(t)} AS x WHERE x.{q(edge.column_of(t.qualified))} = t0.{q(edge.column_of(base.qualified))})"
            )
        sql = (
            "SELECT "
            + ("DISTINCT " if plan.distinct and not plan.measures else "")
            + ", ".join(select)
        )
        sql += " FROM " + from_sql
        if where:
            sql += " WHERE " + " AND ".join(f"({w})" for w in where)
        if grouped and plan.dims:
            sql += " GROUP BY " + ", ".join(group)
        if plan.having:
            tests = [
                f"{self._measure_sql(m, base, alias, ref)} {op} {n}" for m, op, n in plan.having
            ]
            sql += " HAVING " + " AND ".join(tests)
        if plan.order:
            parts = []
            for target, desc in plan.order:
                parts.append(f"{_slot(target)} {'DESC' if desc else 'ASC'} NULLS LAST")
            if plan.limit:
                # ties at the cut are broken by the listed columns, so the answer is stable
                # (rows listed tie by their key; groups by name, the order people read)
                ties = list(range(len(plan.dims)))
                if plan.measures:
                    ties.sort(key=lambda i: _is_key(plan.dims[i].col))
                parts += [_slot(f"d{i}") for i in ties if f"d{i}" not in dict(plan.order)]
            sql += " ORDER BY " + ", ".join(parts)
        if plan.limit:
            sql += f" LIMIT {plan.limit}"
        for name, label in _output_names(plan).items():
            sql = sql.replace(_slot(name), q(label))
        self._check_coverage(alias, plan)
        return Linked(
            sql,
            tuple(alias),
            self._explain(plan, base),
            tuple(self.applied),
        )

    def _explain(self, plan: Plan, base: TableInfo) -> str:
        """What the statement computes, in words (names and values, never the question)."""
        measures = [_describe(m) for m in plan.measures]
        dims = [
            f"{d.grain} of {d.col.column.name}" if d.grain else d.col.column.name for d in plan.dims
        ]
        if measures and not dims and len(measures) == 1 and plan.measures[0].table is base:
            text = f"Counts {base.name}"
        elif measures:
            text = _sentence(", ".join(measures)) + (f" per {', '.join(dims)}" if dims else "")
            text += f" over {base.name}"
        else:
            text = ("Lists distinct " if plan.distinct else "Lists ") + ", ".join(dims)
            text += f" of {base.name}"
        conditions = [_condition_words(cond, c.column.name) for c, cond in plan.filters]
        conditions += [f"no matching {t.name}" for t in plan.anti]
        conditions += [f"a matching {t.name}" for t in plan.semi]
        if conditions:
            text += " where " + " and ".join(conditions)
        if plan.order:
            _, desc = plan.order[0]
            text += f", {'highest' if desc else 'lowest'} first"
        if plan.limit:
            text += f", first {plan.limit}"
        return text + "."

    def _prose_of_definitions(self) -> set[str]:
        """Words of the definitions applied that name nothing in the schema or its values
        ("CAW = cohort average weight"): a definition's prose, not a condition."""
        words: set[str] = set()
        for entry in self.glossary:
            if entry.term not in self.applied:
                continue
            for raw in re.findall(r"[a-z]+", (entry.definition or entry.expression).lower()):
                w = stem(raw)
                if self.vocab.values.get(raw) or self.vocab.values.get(w):
                    continue
                named = any(
                    word_match(w, p) >= 0.9
                    for parts in [
                        *self.vocab.table_words.values(),
                        *self.vocab.column_words.values(),
                    ]
                    for p in parts
                )
                if not named and w not in _OPERATIONS:
                    words.add(w)
        return words

    def _keeps_all(self, plan: Plan, base: TableInfo) -> bool:
        """ "… for all customers", "for every salesperson": a grouped entity keeps its rows
        with no facts (outer join, zero counts), unless a filter or a limit on the facts
        says otherwise."""
        every = re.search(
            r"\b(?:for|of|include|including)\s+(?:all|every)\s+(?:the\s+)?(\w+)|\beven (?:those|if)\b",
            self.low,
        )
        if every is None or not plan.measures or plan.limit:
            return False
        entity = plan.entity
        if entity is None and every.group(1):
            hits = self.vocab.tables_named([stem(every.group(1))])
            if hits and plan.dims and all(d.col.table is hits[0][0] for d in plan.dims):
                entity = plan.entity = hits[0][0]
        if entity is None or entity is base:
            return False
        return all(c.table.qualified == entity.qualified for c, _ in plan.filters)

    def _check_coverage(self, alias: dict[str, str], plan: Plan) -> None:
        """Every content word must be explained by the statement (see ``unexplained``)."""
        conditions = [cond for _, cond in plan.filters] + [c for g in plan.ors for _, c in g]
        conditions += [
            inner.filter[1]
            for m in plan.measures
            for inner in _measures_in(m)
            if inner.filter is not None
        ]
        word = unexplained(
            self.question,
            self.vocab,
            [*alias, *(t.qualified for t in plan.anti)],
            [v for cond in conditions for v in re.findall(r"'([^']*)'", cond)],
            divides=any(m.func in ("EXPR", "SHARE") for m in plan.measures),
            terms=self.applied,
            forgiven=self._prose_of_definitions() | self.known,
        )
        if word is not None:
            raise LinkError(f"nothing in the schema matches {word!r}")

    def _base(self, plan: Plan, counted: Sequence[TableInfo | None]) -> TableInfo:
        cands = self._fact_candidates(plan)
        for c, _ in plan.filters:
            if c.table not in cands:
                cands.append(c.table)

        # the most "child" table: references most other candidates
        def children(t: TableInfo) -> int:
            return sum(
                1
                for e in self.graph.edges_of(t.qualified)
                if e.child == t.qualified and self.catalog.table(e.parent) in cands
            )

        measure_tables = [
            m.col.table for m in plan.measures if m.col and m.func not in ("COUNT_COL",)
        ]
        if measure_tables:
            return max(measure_tables, key=children)
        if plan.measures:
            return max(cands, key=lambda t: (children(t), t in counted))
        if plan.dims:
            return plan.dims[0].col.table
        return cands[0]

    def _count_key(self, base: TableInfo, t: TableInfo) -> str:
        for e in self.graph.edges_of(base.qualified):
            if e.child == base.qualified and e.parent == t.qualified:
                return e.child_column
        return ""

    @staticmethod
    def _render_sql(tree: exp.Expr, columns: dict[int, Col], alias: dict[str, str]) -> str:
        """A glossary definition's SQL with each column qualified by its table's alias."""
        copy = tree.copy()
        originals = list(tree.find_all(exp.Column))
        for old, new in zip(originals, copy.find_all(exp.Column), strict=True):
            col = columns[id(old)]
            if col.table.qualified not in alias:
                raise LinkError(f"the definition's table {col.table.name} is not joined")
            new.set("table", exp.to_identifier(alias[col.table.qualified]))
            new.set("this", identifier(col.column.name))
        return copy.sql(dialect="postgres")

    def _expr_sql(self, node: object, base: TableInfo, alias: dict[str, str], ref: object) -> str:
        if not isinstance(node, tuple):
            raise LinkError("the definition's arithmetic could not be read")
        if node[0] == "num":
            return str(node[1])
        if node[0] == "m":
            return self._measure_sql(node[1], base, alias, ref)
        _, op, left, right = node
        a = self._expr_sql(left, base, alias, ref)
        b = self._expr_sql(right, base, alias, ref)
        if op == "/":
            return f"({a}) * 1.0 / NULLIF({b}, 0)"
        return f"({a} {op} {b})"

    def _measure_sql(self, m: Measure, base: TableInfo, alias: dict[str, str], ref: object) -> str:
        refer = ref
        filt = ""
        if m.filter is not None:
            col, cond = m.filter
            if col.table.qualified in alias:
                filt = f" FILTER (WHERE {cond.replace('{c}', refer(col))})"  # type: ignore[operator]
        if m.func == "EXPR":
            return self._expr_sql(m.expr[0], base, alias, ref)
        if m.func == "SQLEXPR":
            tree, columns = m.expr
            assert isinstance(tree, exp.Expr) and isinstance(columns, dict)
            return self._render_sql(tree, columns, alias)
        if m.func == "ELAPSED":
            start, end, unit, inner = m.expr
            assert isinstance(start, Col) and isinstance(end, Col)
            seconds = f"EXTRACT(EPOCH FROM ({refer(end)} - {refer(start)}))"  # type: ignore[operator]
            if start.column.data_type == "date" and end.column.data_type == "date":
                seconds = f"(({refer(end)} - {refer(start)}) * 86400)"  # type: ignore[operator]
            per = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}[str(unit)]
            return f"{inner}({seconds} / {per}.0)"
        if m.func == "SHARE":
            return f"ROUND(100.0 * COUNT(*){filt} / NULLIF(COUNT(*), 0), 2)"
        if m.func == "RANK" and isinstance(m.expr[0], Measure):
            inner = self._measure_sql(m.expr[0], base, alias, ref)
            over = f"PARTITION BY {refer(m.partition)} " if m.partition else ""  # type: ignore[operator]
            direction = "DESC" if m.descending else "ASC"
            return f"RANK() OVER ({over}ORDER BY {inner} {direction})"
        if m.func in ("COUNT", "COUNT_DISTINCT") and m.table is not None:
            if m.table.qualified == base.qualified:
                if m.func == "COUNT_DISTINCT" and base.primary_key:
                    return f"COUNT(DISTINCT t0.{q(base.primary_key[0])}){filt}"
                return f"COUNT(*){filt}"
            key = self._count_key(base, m.table)
            if key:
                return f"COUNT(DISTINCT t0.{q(key)}){filt}"
            if m.table.qualified in alias and m.table.primary_key:
                return (
                    f"COUNT(DISTINCT {alias[m.table.qualified]}.{q(m.table.primary_key[0])}){filt}"
                )
            return f"COUNT(*){filt}"
        if m.func == "COUNT" or m.col is None:
            return f"COUNT(*){filt}"
        col = refer(m.col)  # type: ignore[operator]
        if m.func == "COUNT_COL":
            return f"COUNT({col}){filt}"
        if m.func == "COUNT_DISTINCT":
            return f"COUNT(DISTINCT {col}){filt}"
        if m.func == "SUM" and self.left:
            return f"COALESCE(SUM({col}){filt}, 0)"
        return f"{m.func}({col}){filt}"


# --- helpers ---------------------------------------------------------------------------


def _bare_count(item: object) -> bool:
    """A count the output list asks for without saying of what ("the total count")."""
    return (
        isinstance(item, Measure)
        and item.func == "COUNT"
        and item.table is None
        and item.col is None
        and item.filter is None
        and not item.dow
    )


def _slot(name: str) -> str:
    """Where an output column's name goes until all names are chosen: NUL never occurs in
    a statement (the service refuses it in questions and SQL), so no literal can hold it."""
    return f"\x00{name}\x00"


def _output_names(plan: Plan) -> dict[str, str]:
    """Readable, distinct names for the result's columns: a column keeps its own name
    ("company_id", "name"; the table's name in front when two tables share it), a time
    grain is named by it ("month"), a measure by what it computes ("sum_amount",
    "count", "win_rate"). Products read the result by these names."""
    names: dict[str, str] = {}
    taken: set[str] = set()

    def claim(key: str, *choices: str) -> None:
        for choice in choices:
            label = re.sub(r"[^a-z0-9]+", "_", choice.lower()).strip("_")[:60] or "value"
            if label not in taken:
                break
        else:
            label = f"{label}_{key}"
        taken.add(label)
        names[key] = label

    for i, d in enumerate(plan.dims):
        own = d.grain or d.col.column.name
        claim(f"d{i}", own, f"{d.col.table.name}_{own}")
    for i, m in enumerate(plan.measures):
        claim(f"m{i}", *_measure_names(m))
    return names


def _measure_names(m: Measure) -> list[str]:
    if m.func in ("EXPR", "SQLEXPR", "RANK") and m.label:
        return [m.label]
    if m.func == "SHARE":
        return ["percentage"]
    if m.filter is not None and "EXTRACT(DOW" in m.filter[1]:
        return [m.label or "day_count"]
    if m.func == "COUNT" and m.col is None:
        table = m.table.name if m.table is not None else ""
        return ["count", f"{table}_count"] if table else ["count"]
    column = m.col.column.name if m.col is not None else ""
    func = {"COUNT_DISTINCT": "distinct", "COUNT_COL": "count"}.get(m.func, m.func.lower())
    return [f"{func}_{column}" if column else func, f"{func}_{m.label}"]


def _table_sql(table: TableInfo) -> str:
    return f"{q(table.schema)}.{q(table.name)}"


def _is_number(data_type: str) -> bool:
    return data_type.startswith(
        ("smallint", "integer", "bigint", "numeric", "real", "double", "money")
    )


def _is_temporal(data_type: str) -> bool:
    return data_type == "date" or data_type.startswith("timestamp")


def _is_key(col: Col) -> bool:
    name = col.column.name.lower()
    return col.table.primary_key == (col.column.name,) or name.endswith("id") or name == "id"


def _only_table(
    words: Sequence[str], hits: list[tuple[TableInfo, float]], vocab: Vocabulary
) -> bool:
    """The words name the table and nothing more ("customers", "the drug")."""
    table = hits[0][0]
    names = [p for name in vocab.table_names(table) for p in name]
    return all(any(word_match(w, n) for n in names) for w in words)


def _measures_in(measure: Measure) -> list[Measure]:
    """A measure and those inside its formula or rank."""
    found = [measure]

    def walk(node: object) -> None:
        if isinstance(node, Measure):
            found.extend(_measures_in(node))
        elif isinstance(node, tuple) and node and node[0] == "m" and isinstance(node[1], Measure):
            found.extend(_measures_in(node[1]))
        elif isinstance(node, tuple) and node and node[0] == "op":
            walk(node[2])
            walk(node[3])

    for node in measure.expr:
        walk(node)
    return found


def _finish(measure: Measure, label: str, joined: Sequence[TableInfo]) -> Measure:
    """The measure labelled with its whole phrase, joined with the tables it requires."""
    measure.label = label
    measure.tables = (*measure.tables, *joined)
    return measure


def _refines(specific: Measure, general: Measure) -> bool:
    """The head's measure names the output's measure more fully (same aggregate, the
    output's words all in the head's)."""
    if specific.func != general.func or specific.col is None or general.col is None:
        return False
    words = {stem(w) for w in re.findall(r"[a-z0-9]+", general.label)} - STOP_WORDS
    more = {stem(w) for w in re.findall(r"[a-z0-9]+", specific.label)}
    return bool(words) and words <= more and len(more) > len(words)


def _same_measure(a: Measure, b: Measure) -> bool:
    base = {"COUNT_DISTINCT": "COUNT"}
    fa, fb = base.get(a.func, a.func), base.get(b.func, b.func)
    if fa != fb:
        return False
    if a.col is not None and b.col is not None:
        return a.col.key == b.col.key
    if a.table is not None and b.table is not None:
        return a.table.qualified == b.table.qualified
    return a.col is None and b.col is None and a.table is None and b.table is None


_REL = re.compile(
    r"\s+(?:who|that|which|whose|where|for|based on|by doing|starting from|ordered|sorted|in"
    r"|with|within|across|from (?:the )?\w+ (?:that|who|which)|of \w+s who|considering|excluding"
    r"|not including)\b",
    re.IGNORECASE,
)


def _cut_relative(text: str) -> tuple[str, str]:
    end = re.search(r"[.?;](\s|$)", text)
    sentence = text[: end.start()] if end else text
    rest = text[end.end() :] if end else ""
    for m in _REL.finditer(sentence):
        before = sentence[: m.start()]
        if before.count("(") <= before.count(")"):  # not inside a formula's parentheses
            return before, sentence[m.start() :] + " " + rest
    return sentence, rest


def _split_items(text: str) -> list[str]:
    """An output list split at commas and "and" outside parentheses. Asides in
    parentheses are dropped unless they hold a list or arithmetic."""
    if not re.search(r"[/*]", text):
        text = re.sub(
            r"\([^)]*\)",
            lambda m: m.group(0) if re.search(r"[/*,]|\band\b", m.group(0)) else " ",
            text,
        )
    parts: list[str] = []
    depth = 0
    current = ""
    for piece in re.split(r"(,\s*(?:and\s+)?|\s+and\s+|\s*&\s*|\(|\))", text):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth = max(depth - 1, 0)
        pending_between = bool(re.search(r"\bbetween\b(?!.*\band\b)", current))
        if pending_between and re.fullmatch(r"\s+and\s+", piece or "x"):
            current += piece  # "between A and B" is one item
        elif depth == 0 and re.fullmatch(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*", piece or "x"):
            parts.append(current)
            current = ""
        else:
            current += piece or ""
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _merge_elliptic(items: list[str], linker: QuestionLinker) -> list[str]:
    """ "first and last name" -> "first name", "last name"."""
    out: list[str] = []
    for i, item in enumerate(items):
        words = item.split()
        if len(words) == 1 and i + 1 < len(items) and linker._item(item) in (None, []):
            nxt = items[i + 1].split()
            if len(nxt) >= 2:
                out.append(f"{item} {nxt[-1]}")
                continue
        if (
            len(words) == 1
            and words[0].lower() in _GENERIC
            and out
            and len(out[-1].split()) >= 2
            and out[-1].split()[-1].lower() in _GENERIC
        ):
            # "drug id and name": the name of the same thing
            out.append(" ".join([*out[-1].split()[:-1], words[0]]))
            continue
        out.append(item)
    return out


# Output items that name the answer itself ("Return the percentage value").
_RESULT_WORDS = frozenset(
    """
    the a percentage percent value result answer ratio rate number figure total
    """.split()
)
# Words that ask for an operation the linker does not compose (windows, comparisons over
# time); a definition that uses them is not mere prose.
_OPERATIONS = frozenset(
    """
    previous prev prior change latest recent earliest rank increase decrease difference
    growth cumulative running moving lag lead new signup signups
    """.split()
)
_RATIO_WORDS = frozenset(["percentage", "percent", "ratio", "rate", "share", "proportion"])
_GENERIC = frozenset(["id", "ids", "name", "names", "type", "code", "date", "title"])
_BE = frozenset(["is", "are", "was", "were", "be", "been", "being", "get", "got"])
_PARTICIPLES = frozenset(
    """
    made sent sold bought paid done given taken written placed owned held run led kept
    """.split()
)


def _arith_tokens(text: str) -> list[str]:
    """Operators, parentheses, numbers and the phrases between them; a hyphen inside a
    word ("opt-in") is part of the word."""
    tokens: list[str] = []
    word = ""
    for i, ch in enumerate(text):
        prev = text[i - 1] if i else " "
        nxt = text[i + 1] if i + 1 < len(text) else " "
        operator = ch in "()+*/" or (ch == "-" and prev in " )" and nxt in " (")
        if operator:
            if word.strip():
                tokens.append(word.strip())
            word = ""
            tokens.append(ch)
        else:
            word += ch
    if word.strip():
        tokens.append(word.strip())
    return tokens


def unexplained(
    question: str,
    vocab: Vocabulary,
    tables: Sequence[str],
    values: Iterable[str],
    *,
    divides: bool = False,
    terms: Sequence[str] = (),
    extra: Iterable[str] = (),
    documented: bool = False,
    forgiven: Iterable[str] = (),
) -> str | None:
    """The first content word of ``question`` that a statement reading ``tables`` and
    comparing with ``values`` does not explain, or None. A word is explained by a name part
    of a table read (or of its columns), a value compared with, a defined term, or the
    grammar of questions about data. An unexplained word ("open deals") is a condition the
    statement would silently drop, so the question is refused instead."""
    parts: list[str] = []
    for name in tables:
        parts += vocab.table_words.get(name, [])
        table = vocab.catalog.table(name)
        if table is not None:
            parts += [p for alias in vocab.table_aliases[name] for p in alias]
            for column in table.columns:
                parts += vocab.column_words[(name, column.name)]
                parts += [p for alias in vocab.column_aliases[(name, column.name)] for p in alias]
            if documented:
                # the schema's documentation ("active: False when the product is
                # discontinued"), for readers that use it
                notes = " ".join([table.comment, *(c.comment for c in table.columns)])
                extra = [*extra, *(stem(w) for w in re.findall(r"[a-z]+", notes.lower()))]
    value_words = {stem(w) for v in values for w in re.findall(r"[a-z0-9]+", v.lower().strip("%"))}
    value_lemmas = {lemma(w) for w in value_words}
    known = set(extra) | set(forgiven)
    known |= {stem(w) for term in terms for w in re.findall(r"[a-z0-9]+", term.lower())}
    toks = tokenize(question)
    for index, tok in enumerate(toks):
        if tok.quoted or not tok.low.isalpha() or len(tok.low) < 3:
            continue
        w = tok.stem
        if w in STOP_WORDS or tok.low in GRAMMAR_WORDS or w in GRAMMAR_WORDS or tok.low in _MONTHS:
            continue
        if (divides and w in _RATIO_WORDS) or tok.text in terms or w in known or tok.low in known:
            continue
        # "have been archived?": a state asked about, not a relation (at the clause's end)
        ends = index + 1 == len(toks) or bool(
            re.match(r"\s*[?.!,;]", question[tok.end : toks[index + 1].start])
        )
        predicate = index > 0 and toks[index - 1].low in (*_BE, "have", "has", "had") and ends
        if _relation_word(tok.low) and not predicate and not vocab.values.get(tok.low):
            continue
        if w in value_words or any(w.startswith(v) for v in value_words if len(v) >= 4):
            continue
        if lemma(tok.low) in value_lemmas:
            continue
        if any(word_match(w, p) for p in parts) or any(
            cover([w], p)[0] >= 0.6 or (len(w) >= 4 and w in p) for p in parts
        ):
            continue
        return tok.text
    return None


def _shift(d: date, unit: str, n: int) -> date:
    """``d`` moved by ``n`` units (months keep the day, clamped to the month's end)."""
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(weeks=n)
    months = n * {"month": 1, "quarter": 3, "year": 12}[unit]
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(d.day, last))


def _truncate(d: date, unit: str) -> date:
    """The start of ``d``'s day, week (Monday), month, quarter or year."""
    if unit == "day":
        return d
    if unit == "week":
        return d - timedelta(days=d.weekday())
    if unit == "month":
        return d.replace(day=1)
    if unit == "quarter":
        return date(d.year, 3 * ((d.month - 1) // 3) + 1, 1)
    return date(d.year, 1, 1)


def _describe(m: Measure) -> str:
    names = {"SUM": "total", "AVG": "average", "MIN": "lowest", "MAX": "highest"}
    if m.func in ("COUNT", "COUNT_DISTINCT") and m.table is not None:
        distinct = "distinct " if m.func == "COUNT_DISTINCT" else ""
        return f"number of {distinct}{m.table.name}"
    if m.col is not None and m.func in names:
        return f"{names[m.func]} {m.col.column.name}"
    if m.col is not None:
        return f"count of {m.col.column.name}"
    if m.func == "RANK":
        return f"rank ({m.label})"
    if m.func == "EXPR":
        return " ".join(m.label.split())
    return "row count"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _condition_words(cond: str, column: str) -> str:
    """ "{c} >= '2023-01-01' AND {c} < '2024-01-01'" -> "day >= '2023-01-01' and <
    '2024-01-01'"; a flag reads as itself ("active", "not active")."""
    if cond == "{c}":
        return column
    if cond == "NOT {c}":
        return f"not {column}"
    text = cond.replace("{c} ", "").replace(" AND {c} ", " and ")
    text = text.replace("ILIKE", "like").replace("IS NOT NULL", "is present")
    return f"{column} {text}"


def _like(value: str) -> str:
    """A LIKE operand that matches ``value`` literally."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _relation_word(word: str) -> bool:
    """Verbs and adverbs that say how things relate ("prescribed", "received", "most
    frequently"): the joins already express them."""
    return len(word) > 4 and word.endswith(("ed", "ing", "ly")) and not word.endswith("ly" * 2)


def _clean_item(phrase: str) -> str:
    """An output item without its ranking words ("top 3 most common transaction statuses"
    -> "transaction statuses")."""
    p = phrase if re.search(r"[/*]", phrase) else re.sub(r"\([^)]*\)", " ", phrase)
    p = p.strip().strip(".?").strip()
    p = re.sub(r"^(?:the|their|its|his|her|each|a|an|all)\s+", "", p, flags=re.I)
    p = re.sub(r"^(?:showing|including|with|plus|also)\s+(?:the\s+)?", "", p, flags=re.I)
    p = re.sub(r"^(?:overall|resulting|final|calculated|computed)\s+", "", p, flags=re.I)
    p = re.sub(r"^(?:our|my|your)\s+", "", p, flags=re.I)
    if re.match(r"(?:top|bottom)\s+\d+\s+", p, flags=re.I):
        p = re.sub(r"\s+by\s+.*$", "", p)
    p = re.sub(r"^(?:top|bottom|first|last)\s+\d+\s+", "", p, flags=re.I)
    p = re.sub(r"^\d+\s+", "", p)
    p = re.sub(
        r"^(?:most|least)\s+(?:common|frequent(?:ly)?(?:\s+used)?|popular)\s+|^best\s+selling\s+"
        r"|^distinct\s+list\s+of\s+|^list\s+of\s+|^distinct\s+",
        "",
        p,
        flags=re.I,
    )
    return p.strip()


def _explicit_dates(low: str) -> Iterable[tuple[date, int, bool]]:
    """Dates written out: 2023-06-01, Jan 1, 2023, April 1 2023, 1st of Jan 2023."""
    found = []
    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", low):
        try:
            found.append(
                (date(int(m.group(1)), int(m.group(2)), int(m.group(3))), m.start(), False)
            )
        except ValueError:
            continue
    for m in re.finditer(r"\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", low):
        month = _MONTHS.get(m.group(1))
        if month:
            try:
                found.append((date(int(m.group(3)), month, int(m.group(2))), m.start(), False))
            except ValueError:
                continue
    return sorted(found, key=lambda d: d[1])
