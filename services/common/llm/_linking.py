"""Schema linking: question words → tables, columns, stored values → a ``SqlIntent``.

Lexical first (names, thesaurus, stored sample values, one-typo tolerance), with an
optional embedding similarity between the question and each table's description to
break ties. The result never names a table or column the catalog does not have.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from services.common.llm._dates import MONTHS, date_range
from services.common.llm._text import (
    NUMBER_WORDS,
    STOPWORDS,
    Token,
    closest_stem,
    parse_number,
    stem,
    synonyms,
    tokenize,
    word_list,
)
from services.common.llm._types import (
    AggregateFunction,
    CatalogColumn,
    CatalogTable,
    FilterOp,
    IntentAggregate,
    IntentFilter,
    IntentKind,
    SchemaCatalog,
    SortDirection,
    SqlIntent,
)

NUMERIC_TYPES = tuple(
    word_list("int integer bigint smallint numeric decimal real double float money serial")
)
DATE_TYPES = ("date", "timestamp", "time")

_GENERIC_COLUMN_WORDS = frozenset(
    {"id", "at", "on", "date", "name", "type", "number", "num", "no", "is", "has", "list"}
)
_GENERIC_COLUMN_WORDS |= {"first", "last", "total", "count", "key", "code", "the"}

# Words that steer the intent rather than name data; never treated as entity names.
CUE_WORDS = frozenset(
    word_list(
        """
        qtr qtrs yr yrs how many much number count counts total sum average avg
        mean median top highest lowest largest biggest smallest fewest most
        least cheapest priciest expensive best worst max maximum min minimum per
        each breakdown break broken grouped group rank ranked ranking sorted
        ordered order list show display give find which what who whose when last
        this next past previous current quarter quarters month months year years
        week weeks day days today yesterday ytd since before after between over
        above under below more less greater fewer than exceeding least atleast
        equal exactly latest newest oldest earliest recent q1 q2 q3 q4 all every
        across split compare describe tell me please open closed any
        """
    )
)
_NEGATIONS = frozenset({"not", "excluding", "except", "without", "non", "other"})

_COMPARATORS: tuple[tuple[str, FilterOp], ...] = (
    (
        r"more than|greater than|over|above|exceeding|higher than|larger than|bigger than|>",
        FilterOp.GT,
    ),
    (r"at least|no less than|minimum of|>=", FilterOp.GTE),
    (r"less than|fewer than|under|below|lower than|smaller than|<", FilterOp.LT),
    (r"at most|no more than|up to|maximum of|<=", FilterOp.LTE),
    (r"exactly|equal to|equals", FilterOp.EQ),
)
_NUMBER = r"(\$?\d[\d,]*(?:\.\d+)?\s?(?:k|m|b|thousand|million|billion)?\b)"
_RANK_DESC = tuple(
    word_list(
        "top highest largest biggest most best greatest priciest latest newest recent max maximum"
    )
)
_RANK_ASC = tuple(
    word_list("lowest smallest least fewest worst cheapest bottom oldest earliest min minimum")
)


# Aliases too loose for grading text but right for naming a column ("deal size").
_LINK_ONLY_ALIASES: dict[str, tuple[str, ...]] = {
    "amount": ("size",),
    "employe": ("size",),
    "annual": ("yearly",),
}

# --- the catalog's vocabulary ---------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One thing a phrase may name: a table, a column, or a stored value of a column."""

    kind: Literal["table", "column", "value"]
    table: str
    column: str | None = None
    value: str | None = None
    partial: bool = False
    weight: float = 1.0


@dataclass
class Mention:
    """A run of question tokens that matched vocabulary terms."""

    start: int
    end: int  # exclusive token index
    terms: list[Term]
    fuzzy: bool = False

    def of_kind(self, kind: str) -> list[Term]:
        return [t for t in self.terms if t.kind == kind]


def column_kind(column: CatalogColumn) -> Literal["numeric", "date", "text", "bool"]:
    """Coarse type of a column from its SQL type name."""
    typ = column.type.lower()
    if typ.startswith("bool"):
        return "bool"
    if any(typ.startswith(d) for d in DATE_TYPES):
        return "date"
    if any(typ.startswith(n) for n in NUMERIC_TYPES):
        return "numeric"
    return "text"


def is_key(column: CatalogColumn) -> bool:
    """Primary and foreign keys are plumbing, not things people ask about."""
    return column.primary_key or column.references is not None or column.name.lower() == "id"


class Vocabulary:
    """Phrases (tuples of stems) of one catalog mapped to the terms they can name."""

    def __init__(self, catalog: SchemaCatalog) -> None:
        self.catalog = catalog
        self.phrases: dict[tuple[str, ...], list[Term]] = {}
        for table in catalog.tables:
            self._add_table(table)
        self.single_words = sorted({p[0] for p in self.phrases if len(p) == 1})
        self.max_len = max((len(p) for p in self.phrases), default=1)

    def _add(self, words: Sequence[str], term: Term) -> None:
        key = tuple(stem(w) for w in words if w)
        if not key:
            return
        bucket = self.phrases.setdefault(key, [])
        if term not in bucket:
            bucket.append(term)

    def _add_table(self, table: CatalogTable) -> None:
        words = _name_words(table.name)
        self._add(words, Term("table", table.name))
        if len(words) > 1:
            self._add(words[-1:], Term("table", table.name, weight=0.8))
        for word in words[-1:]:
            for alias in synonyms(word):
                self._add(alias.split(), Term("table", table.name, weight=0.9))
        for column in table.columns:
            if not is_key(column):
                self._add_column(table, column)

    def _add_column(self, table: CatalogTable, column: CatalogColumn) -> None:
        words = _name_words(column.name)
        self._add(words, Term("column", table.name, column.name))
        meaningful = [w for w in words if w not in _GENERIC_COLUMN_WORDS]
        if len(words) > 1:
            for word in meaningful:
                self._add([word], Term("column", table.name, column.name, weight=0.8))
        for word in meaningful or words:
            for alias in (*synonyms(word), *_LINK_ONLY_ALIASES.get(stem(word), ())):
                self._add(alias.split(), Term("column", table.name, column.name, weight=0.8))
        if column_kind(column) != "text":
            return
        for value in column.sample_values:
            value_words = [t.low for t in tokenize(value)]
            if not value_words:
                continue
            self._add(value_words, Term("value", table.name, column.name, value))
            if len(value_words) > 1:
                for token in tokenize(value):
                    if token.low not in STOPWORDS and len(token.low) >= 3:
                        self._add(
                            [token.low],
                            Term(
                                "value",
                                table.name,
                                column.name,
                                token.raw,
                                partial=True,
                                weight=0.6,
                            ),
                        )


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[_\s.-]+", spaced) if w]


# --- linking --------------------------------------------------------------------------


@dataclass
class Linked:
    """What linking found: the intent (if any), ranked tables, confidence, a restatement."""

    intent: SqlIntent | None
    tables: list[str]
    confidence: float
    restatement: str
    table_scores: dict[str, float] = field(default_factory=dict)
    refused_write: bool = False


_WRITE_VERBS = re.compile(
    r"\b(drop|delete|truncate|update|insert|alter|grant|revoke|create table|modify|remove)\b",
    re.IGNORECASE,
)


class SchemaLinker:
    """Links one question at a time against one catalog; ``today`` anchors relative dates."""

    def __init__(
        self,
        catalog: SchemaCatalog,
        today: Callable[[], date],
        table_similarity: dict[str, float] | None = None,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        self.catalog = catalog
        self.vocab = vocabulary if vocabulary is not None else Vocabulary(catalog)
        self.today = today
        self.table_similarity = table_similarity or {}

    # ---- public ------------------------------------------------------------------

    def link(self, question: str) -> Linked:
        """Link ``question`` to a structured intent, or explain why none fits."""
        state = _State(question, tokenize(question))
        self._match_mentions(state)
        self._find_entities(state)
        scores = self._score_tables(state)
        ranked = [t for t, s in sorted(scores.items(), key=lambda kv: -kv[1]) if s > 0]
        refused = bool(_WRITE_VERBS.search(question))
        if not ranked:
            return Linked(
                None,
                [],
                0.0,
                "The question names no table, column or stored value of this schema.",
                scores,
                refused,
            )
        base = ranked[0]
        intent = self._build_intent(state, base)
        tables = _intent_tables(intent, self.catalog) if intent else ranked[:3]
        confidence = self._confidence(state) if intent else 0.0
        restatement = restate(intent) if intent else ""
        if refused:
            restatement += " Requests to change data are ignored: only reading is supported."
        return Linked(intent, tables, confidence, restatement.strip(), scores, refused)

    # ---- mentions ----------------------------------------------------------------

    def _match_mentions(self, state: _State) -> None:
        tokens = state.tokens
        i = 0
        while i < len(tokens):
            matched = False
            for n in range(min(self.vocab.max_len, len(tokens) - i), 0, -1):
                window = tokens[i : i + n]
                if n == 1 and (window[0].low in STOPWORDS or window[0].low in _SKIP_SINGLE):
                    break
                key = tuple(t.stem for t in window)
                terms = [
                    t
                    for t in self.vocab.phrases.get(key, ())
                    # A word of a longer stored value must match as typed: "closed"
                    # picks "Closed Won", "closing" does not.
                    if not t.partial
                    or (t.value or "").lower() in (window[0].low, window[0].low[:-1])
                ]
                if terms:
                    state.mentions.append(Mention(i, i + n, terms))
                    i += n
                    matched = True
                    break
            if matched:
                continue
            token = tokens[i]
            if (
                token.low not in STOPWORDS
                and token.low not in CUE_WORDS
                and token.low not in MONTHS
                and not token.is_number
                and len(token.low) >= 4
            ):
                near = closest_stem(token.low, self.vocab.single_words)
                if near is not None:
                    terms = self.vocab.phrases[(near,)]
                    state.mentions.append(Mention(i, i + 1, list(terms), fuzzy=True))
            i += 1

    def _find_entities(self, state: _State) -> None:
        covered = state.covered()
        tokens = state.tokens
        for match in re.finditer(r"[\"“']([^\"”']{2,80})[\"”']", state.question):
            state.entities.append((match.group(1).strip(), _token_at(tokens, match.start())))
            for k, tok in enumerate(tokens):
                if match.start() <= tok.start < match.end():
                    covered.add(k)
        i = 0
        while i < len(tokens):
            token = tokens[i]
            prev = tokens[i - 1].low if i > 0 else ""
            starts = (
                i not in covered
                and _could_be_name(token)
                and (
                    (token.capitalised and (i > 0 or token.low not in _SENTENCE_STARTERS))
                    or prev in {"at", "for", "from", "named", "called", "with", "of", "about"}
                )
            )
            if not starts:
                i += 1
                continue
            j = i + 1
            while (
                j < len(tokens)
                and j not in covered
                and _could_be_name(tokens[j])
                and (tokens[j].capitalised or tokens[j].low in {"inc", "corp", "llc", "ltd", "co"})
            ):
                j += 1
            name = state.question[token.start : tokens[j - 1].end]
            state.entities.append((name, i))
            for k in range(i, j):
                covered.add(k)
            i = j

    # ---- tables ------------------------------------------------------------------

    def _score_tables(self, state: _State) -> dict[str, float]:
        scores = {t.name: 0.0 for t in self.catalog.tables}
        first_table: str | None = None
        for mention in state.mentions:
            seen: set[tuple[str, str]] = set()
            for term in mention.terms:
                key = (term.kind, term.table)
                if key in seen:
                    continue
                seen.add(key)
                weight = {"table": 3.0, "column": 1.0, "value": 1.0}[term.kind] * term.weight
                scores[term.table] += weight
                if term.kind == "table" and first_table is None:
                    first_table = term.table
        if first_table is not None:
            scores[first_table] += 2.0
        counted = self._counted_mention(state)
        if counted is not None and first_table is None:
            # "how many emails …": what is counted is the subject, even when it is a value.
            for table in {t.table for t in counted.terms if t.kind in ("table", "value")}:
                scores[table] += 2.0
        if state.entities:
            hub = self._entity_table(None)
            if hub is not None:
                scores[hub] += 0.5
        for table, similarity in self.table_similarity.items():
            if table in scores:
                scores[table] += 2.0 * max(0.0, similarity)
        return scores

    def _numeric_ref(self, mention: Mention, base: str) -> str | None:
        for term in mention.of_kind("column"):
            column = self._column(term.table, term.column or "")
            if column is not None and column_kind(column) == "numeric":
                ref = self._reach(base, term.table, column.name, allow_child=False)
                if ref is not None:
                    return ref
        return None

    def _counted_mention(self, state: _State) -> Mention | None:
        for i, token in enumerate(state.tokens):
            nxt = state.tokens[i + 1].low if i + 1 < len(state.tokens) else ""
            if (token.low == "many" and i > 0 and state.tokens[i - 1].low == "how") or (
                token.low == "number" and nxt == "of"
            ):
                return _mention_after(state, i + (1 if token.low == "number" else 0), max_gap=1)
        return None

    # ---- intent ------------------------------------------------------------------

    def _build_intent(self, state: _State, base: str) -> SqlIntent | None:
        low = state.low
        group, group_base = self._group_target(state, base)
        most_table = self._superlative_table(state, base)
        if most_table is not None:
            # "which company has the most deals": count the deals, grouped by company.
            child, parent_col = most_table
            base = child
            group = (parent_col,)
        elif group_base is not None:
            base = group_base
        filters = self._filters(state, base, exclude=set(group))
        count_cue = re.search(r"\b(how many|(?<!phone )number of|count|counts|# of)\b", low)
        avg_cue = re.search(r"\b(average|avg|mean)\b", low)
        sum_cue = re.search(r"\b(total|sum|combined|overall)\b", low)
        rank = self._rank_cue(state)
        n = self._number_requested(state)
        measure = self._mentioned_columns(state, base, kinds=("numeric",))
        counted = self._counted_mention(state)
        quantity = (
            self._numeric_ref(counted, base)
            if counted is not None and not counted.of_kind("table")
            else None
        )
        if count_cue and quantity is not None:
            # "how many employees does Acme have" adds up a quantity, it counts no rows.
            count_cue = None
            measure = [quantity, *measure]

        if most_table is not None:
            return SqlIntent(
                kind=IntentKind.GROUP_BY,
                table=base,
                filters=filters,
                group_by=group,
                aggregate=IntentAggregate(AggregateFunction.COUNT),
                order_by=IntentAggregate(AggregateFunction.COUNT).alias,
                direction=rank[1] if rank else SortDirection.DESC,
                limit=n or (1 if self._asks_singular(state) else 10),
            )
        if count_cue and not (avg_cue and measure):
            aggregate = IntentAggregate(AggregateFunction.COUNT)
            if group:
                return SqlIntent(
                    kind=IntentKind.GROUP_BY,
                    table=base,
                    filters=filters,
                    group_by=group,
                    aggregate=aggregate,
                    order_by=aggregate.alias,
                    direction=rank[1] if rank else SortDirection.DESC,
                    limit=n,
                )
            return SqlIntent(
                kind=IntentKind.COUNT, table=base, filters=filters, aggregate=aggregate
            )
        function: AggregateFunction | None = None
        if avg_cue:
            function = AggregateFunction.AVG
        elif sum_cue or quantity is not None:
            function = AggregateFunction.SUM
        elif (
            rank
            and measure
            and re.match(r"^\s*(what's|whats|what is|what was)\b", low)
            and not re.search(r"\b(which|who)\b|\btop \d", low)
            and not self._ranks_entity(state)
        ):
            function = (
                AggregateFunction.MAX if rank[1] is SortDirection.DESC else AggregateFunction.MIN
            )
        if function is not None:
            column = measure[0] if measure else self._default_measure(base)
            if column is None:
                return None
            aggregate = IntentAggregate(function, column)
            which_target = self._which_target(state, base) if rank else None
            if not group and which_target:
                group = (which_target,)
            if group:
                return SqlIntent(
                    kind=IntentKind.GROUP_BY,
                    table=base,
                    filters=filters,
                    group_by=group,
                    aggregate=aggregate,
                    order_by=aggregate.alias,
                    direction=rank[1] if rank else SortDirection.DESC,
                    limit=n or (1 if which_target and self._asks_singular(state) else None),
                )
            return SqlIntent(
                kind=IntentKind.AGGREGATE, table=base, filters=filters, aggregate=aggregate
            )
        labels = self._label_columns(base)
        attributes = [
            c
            for c in self._mentioned_columns(state, base, kinds=("text", "numeric", "date", "bool"))
            if c not in {f.column for f in filters} and c not in labels
        ]
        if rank is not None:
            order = measure[0] if measure else self._implicit_order(state, base, rank[0])
            if order is not None:
                columns = _unique([*labels, *attributes, order])
                return SqlIntent(
                    kind=IntentKind.TOP_N,
                    table=base,
                    columns=tuple(columns[:6]),
                    filters=filters,
                    order_by=order,
                    direction=rank[1],
                    limit=n or (1 if self._asks_singular(state) else 10),
                )
        if group:
            aggregate = IntentAggregate(AggregateFunction.COUNT)
            return SqlIntent(
                kind=IntentKind.GROUP_BY,
                table=base,
                filters=filters,
                group_by=group,
                aggregate=aggregate,
                order_by=aggregate.alias,
                direction=SortDirection.DESC,
            )
        named = bool(state.entity_used) or any(
            f.column.rpartition(".")[2] in self._label_columns(f.column.rpartition(".")[0])
            if "." in f.column
            else f.column in labels
            for f in filters
        )
        lookup = bool(
            named
            and attributes
            and re.search(r"\b(what|what's|whats|who|who's|when|where)\b|\bof\b", low)
        )
        if lookup:
            return SqlIntent(
                kind=IntentKind.LOOKUP,
                table=base,
                columns=tuple(_unique([*labels, *attributes])[:6]),
                filters=filters,
                limit=n,
            )
        return SqlIntent(
            kind=IntentKind.LIST,
            table=base,
            columns=tuple(_unique([*labels, *attributes])[:6]),
            filters=filters,
            limit=n,
        )

    # ---- pieces of the intent ----------------------------------------------------

    def _group_target(self, state: _State, base: str) -> tuple[tuple[str, ...], str | None]:
        """Columns after "by / per / for each / across"; may move the base to a child table.

        Returns the group columns and, when the grouping names a table, the table to count.
        """
        tokens = state.tokens
        for i, token in enumerate(tokens):
            cue = token.low in {"per", "by", "each", "across"} or (
                token.low == "broken" and i + 1 < len(tokens) and tokens[i + 1].low == "down"
            )
            if not cue:
                continue
            mention = _mention_after(state, i)
            if mention is None:
                continue
            for term in mention.of_kind("column"):
                ref = self._reach(base, term.table, term.column or "")
                column = self._column(term.table, term.column or "")
                if ref is not None and column is not None and column_kind(column) != "numeric":
                    return (ref,), None
            for term in mention.of_kind("table"):
                if term.table == base:
                    continue
                label = self._label_columns(term.table)
                ref = self._reach(base, term.table, label[0]) if label else None
                if ref is not None:
                    return (ref,), None
                # "opportunities per company" asked from the company side: swap.
                child_ref = self._reach(term.table, base, (self._label_columns(base) or [""])[0])
                if child_ref is not None:
                    return (child_ref,), term.table
        return (), None

    def _superlative_table(self, state: _State, base: str) -> tuple[str, str] | None:
        """Count-per-parent ("the most deals"): the child table to count and the group column."""
        tokens = state.tokens
        for i, token in enumerate(tokens):
            if token.low not in {"most", "fewest", "least"}:
                continue
            mention = _mention_after(state, i, max_gap=1, skip_values=True)
            if mention is None:
                continue
            for term in mention.of_kind("table"):
                child = term.table
                if child == base:
                    subject = self._subject_column(state, child, before=i)
                    if subject is not None:
                        return child, subject
                    continue
                labels = self._label_columns(base)
                if labels and self._reach(child, base, labels[0]) is not None:
                    return child, f"{base}.{labels[0]}"
        return None

    def _subject_column(self, state: _State, table: str, before: int) -> str | None:
        """A categorical column named before the superlative ("which industry has …")."""
        for mention in state.mentions:
            if mention.start >= before:
                break
            for term in mention.of_kind("column"):
                ref = self._reach(table, term.table, term.column or "")
                column = self._column(term.table, term.column or "")
                if ref and column is not None and column_kind(column) != "numeric":
                    return ref
        return None

    def _which_target(self, state: _State, base: str) -> str | None:
        """The column or table right after a leading which/what ("which region …")."""
        tokens = state.tokens
        for i, token in enumerate(tokens[:3]):
            if token.low not in {"which", "what"}:
                continue
            mention = _mention_after(state, i, max_gap=0)
            if mention is None:
                return None
            for term in mention.of_kind("column"):
                ref = self._reach(base, term.table, term.column or "")
                column = self._column(term.table, term.column or "")
                if ref and column is not None and column_kind(column) != "numeric":
                    return ref
            for term in mention.of_kind("table"):
                if term.table != base:
                    labels = self._label_columns(term.table)
                    ref = self._reach(base, term.table, labels[0]) if labels else None
                    if ref:
                        return ref
        return None

    def _ranks_entity(self, state: _State) -> bool:
        """ "the largest company (by …)" ranks rows; "the highest deal amount" is a value."""
        for i, token in enumerate(state.tokens):
            if token.low not in _RANK_DESC and token.low not in _RANK_ASC:
                continue
            mention = _mention_after(state, i, max_gap=1)
            if mention is None or not mention.of_kind("table"):
                return False
            follower = next((m for m in state.mentions if m.start == mention.end), None)
            return follower is None or not follower.of_kind("column")
        return False

    def _rank_cue(self, state: _State) -> tuple[str, SortDirection] | None:
        low = state.low
        if re.search(r"\bmost expensive\b|\bmost recent\b", low):
            word = "expensive" if "expensive" in low else "recent"
            return word, SortDirection.DESC
        for token in state.tokens:
            if token.low in _RANK_DESC:
                return token.low, SortDirection.DESC
            if token.low in _RANK_ASC:
                return token.low, SortDirection.ASC
        return None

    def _number_requested(self, state: _State) -> int | None:
        """N in "top 5", "ten largest", "first 3", "5 biggest"."""
        tokens = state.tokens
        for i, token in enumerate(tokens):
            value = _small_int(token)
            if value is None:
                continue
            prev = tokens[i - 1].low if i > 0 else ""
            nxt = tokens[i + 1].low if i + 1 < len(tokens) else ""
            if prev in {"top", "first", "bottom", "last"} and not _is_date_unit(nxt):
                return value
            if nxt in _RANK_DESC or nxt in _RANK_ASC:
                return value
            follows_table = any(m.start == i + 1 and m.of_kind("table") for m in state.mentions)
            if follows_table and prev not in {"than", "over", "under", "above", "below"}:
                return value
        return None

    def _asks_singular(self, state: _State) -> bool:
        """A singular subject ("which company", "who") asks for one row."""
        tokens = state.tokens
        for i, token in enumerate(tokens[:3]):
            if token.low in {"which", "what"} and i + 1 < len(tokens):
                subject = tokens[i + 1]
                if subject.low not in STOPWORDS and not subject.is_number:
                    return _singular(subject.low)
        for mention in state.mentions:
            if mention.of_kind("table"):
                return _singular(tokens[mention.end - 1].low)
        return bool(re.search(r"\b(who|which one)\b", state.low))

    def _mentioned_columns(self, state: _State, base: str, kinds: tuple[str, ...]) -> list[str]:
        found: list[str] = []
        for mention in state.mentions:
            best: str | None = None
            for term in sorted(mention.of_kind("column"), key=lambda t: t.table != base):
                column = self._column(term.table, term.column or "")
                if column is None or column_kind(column) not in kinds:
                    continue
                ref = self._reach(base, term.table, column.name, allow_child=False)
                if ref is not None:
                    best = ref
                    break
            if best is not None and best not in found:
                found.append(best)
        return found

    def _default_measure(self, table: str) -> str | None:
        cat = self.catalog.table(table)
        if cat is None:
            return None
        numeric = [c for c in cat.columns if column_kind(c) == "numeric" and not is_key(c)]
        for preferred in ("amount", "value", "revenue", "price", "total"):
            for column in numeric:
                if preferred in column.name.lower():
                    return column.name
        return numeric[0].name if numeric else None

    def _implicit_order(self, state: _State, base: str, word: str) -> str | None:
        if word in {"latest", "newest", "recent", "oldest", "earliest"}:
            return self._date_column(state, base)
        if word in {"cheapest", "expensive", "priciest"}:
            cat = self.catalog.table(base)
            for column in cat.columns if cat else ():
                if any(k in column.name.lower() for k in ("price", "cost", "amount")):
                    return column.name
        return self._default_measure(base)

    def _date_column(self, state: _State, base: str) -> str | None:
        cat = self.catalog.table(base)
        if cat is None:
            return None
        dates = [c for c in cat.columns if column_kind(c) == "date"]
        if not dates:
            return None
        stems = {t.stem for t in state.tokens}
        for column in dates:
            words = [stem(w) for w in _name_words(column.name) if w not in _GENERIC_COLUMN_WORDS]
            if any(w in stems for w in words):
                return column.name
        return dates[0].name

    def _label_columns(self, table: str) -> list[str]:
        cat = self.catalog.table(table)
        if cat is None:
            return []
        names = [
            c.name
            for c in cat.columns
            if c.name.lower() == "name" or c.name.lower().endswith("_name")
        ]
        if names:
            return names
        for candidate in ("title", "subject", "email", "label"):
            column = cat.column(candidate)
            if column is not None:
                return [column.name]
        texts = [c.name for c in cat.columns if column_kind(c) == "text" and not is_key(c)]
        return texts[:1]

    # ---- filters -----------------------------------------------------------------

    def _filters(self, state: _State, base: str, exclude: set[str]) -> tuple[IntentFilter, ...]:
        filters: list[IntentFilter] = []
        used_columns: set[str] = set()
        tokens = state.tokens
        for mention in state.mentions:
            values = mention.of_kind("value")
            if not values:
                continue
            if not any(v.table == base for v in values) and any(
                self._reach(base, c.table, c.column or "", allow_child=False)
                for c in mention.of_kind("column")
            ):
                continue  # "the email of …" names a column here, not the stored value Email
            choice = self._best_value_term(values, base)
            if choice is None:
                continue
            term, ref = choice
            if ref in exclude or ref in used_columns:
                continue
            negated = any(
                tokens[k].low in _NEGATIONS for k in range(max(0, mention.start - 2), mention.start)
            )
            op = FilterOp.NE if negated else (FilterOp.CONTAINS if term.partial else FilterOp.EQ)
            filters.append(IntentFilter(ref, op, term.value or ""))
            used_columns.add(ref)
        filters.extend(self._numeric_filters(state, base))
        filters.extend(self._date_filters(state, base))
        for name, position in state.entities:
            entity_ref = self._entity_column(base, name)
            if entity_ref is not None and entity_ref not in used_columns:
                filters.append(IntentFilter(entity_ref, FilterOp.CONTAINS, name))
                used_columns.add(entity_ref)
                state.entity_used.add(position)
        return tuple(filters)

    def _best_value_term(self, terms: list[Term], base: str) -> tuple[Term, str] | None:
        ranked: list[tuple[int, int, Term, str]] = []
        for term in terms:
            if term.column is None:
                continue
            ref = self._reach(base, term.table, term.column)
            if ref is None:
                continue
            distance = (
                0
                if term.table == base
                else (1 if "." in ref and not self._is_child(base, term.table) else 2)
            )
            ranked.append((int(term.partial), distance, term, ref))
        if not ranked:
            return None
        ranked.sort(key=lambda r: (r[1], r[0]))
        _, _, term, ref = ranked[0]
        return term, ref

    def _numeric_filters(self, state: _State, base: str) -> list[IntentFilter]:
        out: list[IntentFilter] = []
        low = state.low
        between = re.finditer(rf"\bbetween\s+{_NUMBER}\s+and\s+{_NUMBER}", low)
        spans: list[tuple[int, int]] = []
        for match in between:
            column = self._numeric_column_near(state, base, match.start(), match.end())
            lo, hi = _to_number(match.group(1)), _to_number(match.group(2))
            if column and lo is not None and hi is not None:
                out.append(IntentFilter(column, FilterOp.GTE, _num(lo)))
                out.append(IntentFilter(column, FilterOp.LTE, _num(hi)))
                spans.append(match.span())
        for pattern, op in _COMPARATORS:
            for match in re.finditer(rf"(?:(?<=\s)|^)(?:{pattern})\s*{_NUMBER}", low):
                if any(s <= match.start() < e for s, e in spans):
                    continue
                value = _to_number(match.group(1))
                if value is None or _looks_like_year(match.group(1), low, match.end()):
                    continue
                column = self._numeric_column_near(state, base, match.start(), match.end())
                if column is None:
                    continue
                out.append(IntentFilter(column, op, _num(value)))
                spans.append(match.span())
        return out

    def _numeric_column_near(self, state: _State, base: str, start: int, end: int) -> str | None:
        best: tuple[int, str] | None = None
        for mention in state.mentions:
            m_start = state.tokens[mention.start].start
            m_end = state.tokens[mention.end - 1].end
            distance = start - m_end if m_end <= start else m_start - end
            if distance < 0 or distance > 30:
                continue
            for term in mention.of_kind("column"):
                column = self._column(term.table, term.column or "")
                if column is None or column_kind(column) != "numeric":
                    continue
                ref = self._reach(base, term.table, column.name)
                if ref is not None and (best is None or distance < best[0]):
                    best = (distance, ref)
        if best is not None:
            return best[1]
        return self._default_measure(base)

    def _date_filters(self, state: _State, base: str) -> list[IntentFilter]:
        window = date_range(state.low, self.today())
        if window is None:
            return []
        column = self._date_column(state, base)
        if column is None:
            return []
        start, end = window
        out = []
        if start is not None:
            out.append(IntentFilter(column, FilterOp.GTE, start.isoformat()))
        if end is not None:
            out.append(IntentFilter(column, FilterOp.LT, end.isoformat()))
        return out

    def _entity_column(self, base: str, name: str) -> str | None:
        """Which name column an entity filters: a stored value match first, then the hub."""
        lowered = name.lower()
        candidates: list[tuple[str, str]] = []
        cat = self.catalog.table(base)
        if cat is not None:
            candidates += [(base, c) for c in self._label_columns(base)]
            for column in cat.columns:
                if column.references:
                    parent = column.references.rpartition(".")[0]
                    candidates += [(parent, c) for c in self._label_columns(parent)]
        for table, column_name in candidates:
            found = self._column(table, column_name)
            if found and any(lowered in v.lower() for v in found.sample_values):
                return self._reach(base, table, column_name)
        hub = self._entity_table(base)
        if hub is not None:
            labels = self._label_columns(hub)
            if labels:
                return self._reach(base, hub, labels[0])
        labels = self._label_columns(base)
        return labels[0] if labels else None

    def _entity_table(self, base: str | None) -> str | None:
        """The table most others point at (e.g. companies): where named things live."""
        referenced: dict[str, int] = {}
        for table in self.catalog.tables:
            for column in table.columns:
                if column.references:
                    parent = column.references.rpartition(".")[0]
                    referenced[parent] = referenced.get(parent, 0) + 1
        if not referenced:
            return None
        if base is not None:
            cat = self.catalog.table(base)
            parents = {
                c.references.rpartition(".")[0]
                for c in (cat.columns if cat else ())
                if c.references
            }
            reachable = [t for t in referenced if t in parents or t == base]
            if not reachable:
                return None
            return max(reachable, key=lambda t: referenced[t])
        return max(referenced, key=lambda t: referenced[t])

    # ---- catalog navigation --------------------------------------------------------

    def _column(self, table: str, column: str) -> CatalogColumn | None:
        cat = self.catalog.table(table)
        return cat.column(column) if cat else None

    def _is_child(self, base: str, table: str) -> bool:
        cat = self.catalog.table(table)
        return any(
            c.references and c.references.rpartition(".")[0] == base
            for c in (cat.columns if cat else ())
        )

    def _reach(self, base: str, table: str, column: str, *, allow_child: bool = True) -> str | None:
        """How the intent on ``base`` refers to ``table.column``: direct, parent or child."""
        if table == base:
            return column
        cat = self.catalog.table(base)
        if cat is None:
            return None
        if any(c.references and c.references.rpartition(".")[0] == table for c in cat.columns):
            return f"{table}.{column}"
        if allow_child and self._is_child(base, table):
            return f"{table}.{column}"
        return None

    def _confidence(self, state: _State) -> float:
        content = [
            i
            for i, t in enumerate(state.tokens)
            if t.low not in STOPWORDS
            and t.low not in CUE_WORDS
            and not t.is_number
            and t.low not in MONTHS
            and t.low not in _SKIP_SINGLE
        ]
        if not content:
            return 1.0
        covered = state.covered()
        for name, position in state.entities:
            if position in state.entity_used:
                covered.update(range(position, position + len(name.split())))
        explained = sum(1 for i in content if i in covered)
        score = explained / len(content)
        fuzzy = sum(1 for m in state.mentions if m.fuzzy)
        return round(max(0.0, score - 0.05 * fuzzy), 3)


_SKIP_SINGLE = frozenset({"s", "data", "table", "tables", "row", "rows", "record", "records"})
_SENTENCE_STARTERS = frozenset(
    STOPWORDS | CUE_WORDS | {"show", "list", "give", "find", "get", "name", "count", "rank"}
)


@dataclass
class _State:
    question: str
    tokens: list[Token]
    mentions: list[Mention] = field(default_factory=list)
    entities: list[tuple[str, int]] = field(default_factory=list)
    entity_used: set[int] = field(default_factory=set)

    @property
    def low(self) -> str:
        return self.question.lower()

    def covered(self) -> set[int]:
        out: set[int] = set()
        for mention in self.mentions:
            out.update(range(mention.start, mention.end))
        return out


def _singular(word: str) -> bool:
    return not word.endswith("s") or word.endswith(("ss", "us", "is"))


_WRITE_WORDS = frozenset(
    {"drop", "delete", "truncate", "update", "insert", "alter", "grant", "revoke", "create"}
)


def _could_be_name(token: Token) -> bool:
    return (
        token.low not in STOPWORDS
        and token.low not in _WRITE_WORDS
        and token.low not in CUE_WORDS
        and token.low not in MONTHS
        and token.low not in _SKIP_SINGLE
        and not token.is_number
        and not re.fullmatch(r"q[1-4]", token.low)
    )


def _mention_after(
    state: _State, index: int, max_gap: int = 2, *, skip_values: bool = False
) -> Mention | None:
    """The mention starting just after token ``index``, past articles (and values)."""
    skippable = {"the", "a", "an", "each", "their", "its", "every", "of", "total", "average"}
    starts = {m.start: m for m in state.mentions}
    position = index + 1
    gap = 0
    while position < len(state.tokens) and gap <= max_gap:
        mention = starts.get(position)
        if mention is not None:
            if not (skip_values and all(t.kind == "value" for t in mention.terms)):
                return mention
            position = mention.end
            continue
        if state.tokens[position].low not in skippable:
            return None
        position += 1
        gap += 1
    return None


def _token_at(tokens: list[Token], char_index: int) -> int:
    for i, token in enumerate(tokens):
        if token.start >= char_index:
            return i
    return len(tokens)


def _small_int(token: Token) -> int | None:
    if token.low in NUMBER_WORDS:
        return NUMBER_WORDS[token.low]
    if token.low.isdigit() and 0 < int(token.low) <= 1000 and len(token.low) < 4:
        return int(token.low)
    return None


def _is_date_unit(word: str) -> bool:
    return word in {"day", "days", "week", "weeks", "month", "months", "quarter", "quarters"} or (
        word in {"year", "years"}
    )


def _to_number(raw: str) -> float | None:
    text = raw.strip().replace(" ", "")
    for word, suffix in (("thousand", "k"), ("million", "m"), ("billion", "b")):
        text = text.replace(word, suffix)
    return parse_number(text)


def _num(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def _looks_like_year(raw: str, low: str, end: int) -> bool:
    digits = raw.strip().lstrip("$")
    return bool(re.fullmatch(r"(19|20)\d\d", digits)) and not re.match(
        r"\s*(employees|people|staff|units|seats|users|\$|dollars|usd)", low[end:]
    )


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _intent_tables(intent: SqlIntent, catalog: SchemaCatalog) -> list[str]:
    refs = [*intent.columns, *intent.group_by, *(f.column for f in intent.filters)]
    if intent.aggregate is not None:
        refs.append(intent.aggregate.column)
    if intent.order_by:
        refs.append(intent.order_by)
    tables = [intent.table]
    for ref in refs:
        if "." in ref:
            table = ref.rpartition(".")[0]
            if catalog.table(table) is not None and table not in tables:
                tables.append(table)
    return tables


# --- restatement ----------------------------------------------------------------------

_OP_WORDS = {
    FilterOp.EQ: "is",
    FilterOp.NE: "is not",
    FilterOp.GT: "is greater than",
    FilterOp.GTE: "is at least",
    FilterOp.LT: "is less than",
    FilterOp.LTE: "is at most",
    FilterOp.CONTAINS: "contains",
}


def restate(intent: SqlIntent) -> str:
    """One sentence saying what the intent computes (values quoted, nothing added)."""
    where = ""
    if intent.filters:
        where = " where " + " and ".join(
            f"{f.column} {_OP_WORDS[f.op]} {f.value!r}" for f in intent.filters
        )
    agg = intent.aggregate
    agg_text = (
        f"{agg.function.value} of {agg.column if agg.column != '*' else 'rows'}" if agg else ""
    )
    order = f" ordered by {intent.order_by} {intent.direction.value}" if intent.order_by else ""
    limit = f", at most {intent.limit}" if intent.limit else ""
    kind = intent.kind
    if kind is IntentKind.COUNT:
        return f"Count {intent.table}{where}."
    if kind is IntentKind.AGGREGATE:
        return f"Compute the {agg_text} over {intent.table}{where}."
    if kind is IntentKind.GROUP_BY:
        groups = ", ".join(intent.group_by)
        return f"Compute the {agg_text} of {intent.table} per {groups}{where}{order}{limit}."
    columns = ", ".join(intent.columns) or "rows"
    if kind is IntentKind.TOP_N:
        return f"List the top {intent.limit} {intent.table} ({columns}){where}{order}."
    if kind is IntentKind.LOOKUP:
        return f"Look up {columns} of {intent.table}{where}."
    return f"List {intent.table} ({columns}){where}{order}{limit}."


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def table_description(table: CatalogTable) -> str:
    """The text embedded for a table: name, comment and column names."""
    columns = ", ".join(c.name.replace("_", " ") for c in table.columns if not is_key(c))
    comment = f" — {table.comment}" if table.comment else ""
    return f"{table.name.replace('_', ' ')}{comment}: {columns}"
