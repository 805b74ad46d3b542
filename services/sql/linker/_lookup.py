"""Words to schema: the tables a question names, the column a phrase names, the stored
value a word names, and what names an entity (its key and name-like columns)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from services.sql.catalog import TableInfo, is_number
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import (
    Measure,
    Plan,
    grouped_labels,
    is_key,
    is_temporal,
    lit,
    name_columns,
)
from services.sql.linker._vocabulary import Col, Vocabulary
from services.sql.words import (
    GRAMMAR_WORDS,
    STOP_WORDS,
    Tok,
    cover,
    lemma,
    maybe_covers,
    said_in_part,
    stem,
    tokenize,
    word_match,
)


def named_tables(vocab: Vocabulary, toks: list[Tok]) -> list[TableInfo]:
    """Tables the question names anywhere, in order of first mention."""
    words = [stem(p) for t in toks if not t.quoted for p in re.split(r"_", t.low) if p]
    found: list[tuple[int, TableInfo]] = []
    for table in vocab.catalog.tables:
        hits = [
            i
            for parts in vocab.table_names(table)
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


def each_entity(ctx: LinkContext) -> TableInfo | None:
    """The table named after "each", "per" or "for every" in the question."""
    m = re.search(r"\b(?:each|every|per)\s+([a-z]+)", ctx.low)
    if m is None:
        return None
    hits = ctx.vocab.tables_named([stem(m.group(1))])
    return hits[0][0] if hits else None


def label_columns(ctx: LinkContext, table: TableInfo) -> list[Col]:
    """What names an entity: its key and what names its rows (``_plan.grouped_labels``).

    One definition for every reader that shows an entity: "average freight per
    employee" (read here) and the same question spelled out with its filter (read by
    the clause reader) show an employee by the same columns, first and last name, not
    the job ``title`` and ``title_of_courtesy`` many employees share."""
    cols = []
    if table.primary_key:
        pk = table.column(table.primary_key[0])
        if pk:
            cols.append(Col(table, pk))
    cols += [c for c in grouped_labels(table) if c.key not in {k.key for k in cols}]
    if len(cols) <= 1:
        # no column whose words say "name": one whose name ends in it all the same
        # (``username``, ``fullname``), as the clause reader decides what names a row
        cols += [c for c in name_columns(table) if c.key not in {k.key for k in cols}]
    if len(cols) <= 1:
        # no name-like column: the first short, varied text the value index holds
        # (an activity's subject line, not its free-text notes)
        labelled = next((c for c in table.columns if c.known_values), None)
        if labelled is not None:
            cols.append(Col(table, labelled))
    return cols


def content_words(ctx: LinkContext, text: str) -> list[str]:
    """The stems of the text's content words, where a stop word is kept when it is part
    of a column's name said whole: "value" and "record" carry no schema meaning in
    general ("the value of each order"), but "discount value" spells
    ``discount_value`` word for word, and without its "value" it names
    ``discount_type`` just as well (a tie read as whichever comes first)."""
    raw = re.findall(r"[a-z0-9]+", text.lower())
    stems = [stem(w) for w in raw]
    kept: set[int] = set()
    for parts in ctx.vocab.column_words.values():
        width = len(parts)
        said = [p in STOP_WORDS for p in parts]
        if width < 2 or all(said) or not any(said):
            continue  # one word, no stop word to keep, or nothing but stop words
        for i in range(len(stems) - width + 1):
            if stems[i : i + width] == list(parts):
                kept.update(range(i, i + width))
    return [
        s
        for i, (w, s) in enumerate(zip(raw, stems, strict=True))
        if w not in STOP_WORDS or i in kept
    ]


def name_spans(ctx: LinkContext, text: str) -> list[tuple[int, int]]:
    """Where the text spells whole a stored name of several words ("American Airlines
    Inc."), longest first and not overlapping."""
    low = text.lower()
    spans: list[tuple[int, int]] = []
    said = [name for name in ctx.vocab.names if name in low and " " in name.strip()]
    for name in sorted(said, key=len, reverse=True):
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", low):
            if not any(a < m.end() and m.start() < b for a, b in spans):
                spans.append((m.start(), m.end()))
    return spans


def led_spans(ctx: LinkContext, text: str) -> list[tuple[int, int]]:
    """Where the text says a stored name of several words by its leading two or more
    whole words ("united air lines" of 'United Air Lines Inc.'), as people name a thing;
    longest first, not overlapping. Read only to take those words off a counted noun:
    which value they name is the conditions' to decide."""
    low = text.lower()
    words = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[a-z0-9&']+", low)]
    leads: set[tuple[str, ...]] = set()
    for name in ctx.vocab.names:
        parts = tuple(re.findall(r"[a-z0-9&']+", name))
        for size in range(2, len(parts)):
            leads.add(parts[:size])
    spans: list[tuple[int, int]] = []
    for size in range(min(len(words), max((len(lead) for lead in leads), default=0)), 1, -1):
        for i in range(len(words) - size + 1):
            run = words[i : i + size]
            a, b = run[0][0], run[-1][1]
            if tuple(w for _, _, w in run) not in leads:
                continue
            if not any(x < b and a < y for x, y in spans):
                spans.append((a, b))
    return spans


def without_names(ctx: LinkContext, text: str) -> str:
    """The text less the stored names of several words it spells whole ("number of
    American Airlines Inc. flights" -> "number of flights"): a name is a condition on
    the rows, read by the conditions, and its words are not the noun counted ("Airlines"
    names the airlines table, but the flights are what is counted). So is a name said by
    its leading words ("United Air Lines flights", ``led_spans``): its "Air Lines" named
    the airlines table, and the distinct airlines were counted (one per group, a
    confident wrong)."""
    low = text.lower()
    spans = name_spans(ctx, text)
    spans += [s for s in led_spans(ctx, text) if not any(a < s[1] and s[0] < b for a, b in spans)]
    for a, b in sorted(spans, reverse=True):
        low = low[:a] + " " + low[b:]
    return " ".join(low.split())


def find_column(
    ctx: LinkContext,
    words: Sequence[str],
    prefer: Iterable[TableInfo] = (),
    numeric: bool = False,
    threshold: float = 0.5,
) -> Col | None:
    best: tuple[float, Col] | None = None
    preferred = {t.qualified for t in prefer}
    named = {t.qualified: i for i, t in enumerate(ctx.named)}
    for col in ctx.vocab.columns:
        if numeric and (not is_number(col.column.data_type) or is_key(col)):
            continue
        raw = ctx.vocab.column_score(words, col)
        if raw < threshold:
            continue
        score = raw
        if col.table.qualified in preferred:
            score += 0.3
        if numeric:
            if any(e.child == col.table.qualified for e in ctx.graph.edges_of(col.table.qualified)):
                score += 0.2
            score += 0.2 * ctx.vocab.table_score(ctx.words, col.table)
        elif col.table.qualified in named:
            score += 0.3 - 0.02 * named[col.table.qualified]
        else:
            score += 0.2 * ctx.vocab.table_score(ctx.words, col.table)
        if best is None or score > best[0] + 1e-9:
            best = (score, col)
    return best[1] if best else None


def tables_headed(ctx: LinkContext, words: Sequence[str]) -> list[tuple[TableInfo, float]]:
    """Tables whose name starts with the words ("payments" -> payments_received)."""
    found = []
    for table in ctx.catalog.tables:
        parts = ctx.vocab.table_words[table.qualified]
        if len(parts) > len(words) and all(
            word_match(w, p) >= 0.9 for w, p in zip(words, parts, strict=False)
        ):
            found.append((table, len(words) / len(parts)))
    return found if len(found) == 1 else []


def fact_candidates(ctx: LinkContext, plan: Plan) -> list[TableInfo]:
    out: list[TableInfo] = []
    for m in plan.measures:
        for t in [m.col.table if m.col else None, m.table, *m.tables]:
            if t is not None and t not in out:
                out.append(t)
    for d in plan.dims:
        if d.col.table not in out:
            out.append(d.col.table)
    if not out:
        out = list(ctx.catalog.tables)
    return out


def text_column(ctx: LinkContext, phrase: str) -> Col | None:
    words = [stem(w) for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w not in STOP_WORDS]
    words = [w for w in words if w not in ("whose", "letter", "their", "its")][-3:]
    if not words:
        return None
    best: tuple[float, Col] | None = None
    named = {t.qualified for t in ctx.named}
    for col in ctx.vocab.columns:
        if is_number(col.column.data_type) or is_temporal(col.column.data_type):
            continue
        raw = ctx.vocab.column_score(words, col)
        if raw < 0.5:
            continue
        score = raw + (0.3 if col.table.qualified in named else 0.0)
        if best is None or score > best[0]:
            best = (score, col)
    return best[1] if best else None


def find_value_word(ctx: LinkContext, word: str) -> tuple[Col, str] | None:
    """A stored value the word names ("successful" -> status 'success')."""
    found = _stored_as(ctx, word)
    return found[0] if found else None


def _stored_as(ctx: LinkContext, word: str) -> list[tuple[Col, str]]:
    """Every column holding the one stored value the word names, each as good a match
    as the others: the word itself, else the one value it begins with."""
    found = ctx.vocab.values.get(word)
    if not found and len(word) >= 5:
        for value, cols in ctx.vocab.values.items():
            if len(value) >= 4 and word.startswith(value) and len(word) - len(value) <= 3:
                found = cols
                break
    return list(found or [])


def values_nearest(
    ctx: LinkContext, word: str, placed: Sequence[TableInfo]
) -> list[tuple[Col, str]]:
    """The columns holding the word's stored value fewest joins from the tables a
    measure already reads, one pair per column; more than one is a tie the caller
    declines, none means no join reaches the value.

    "the average temperature at JFK": 'JFK' is stored in ``weather.origin`` (the
    measured rows), ``airports.faa`` and ``flights.origin``, each an exact match. The
    first listed used to be taken, and a condition on ``flights.origin`` joined every
    reading to every flight from its airport (an AVG right by luck, a COUNT or SUM
    multiplied). On the measured table itself the condition needs no join at all; a
    column one join away pairs each row with one other at most where it is a key, and
    further ones fan out. Equally near and equally good says nothing about which is
    meant, so it is not guessed. With nothing placed yet, the first listed stays."""
    found = _stored_as(ctx, word)
    if not placed:
        return found[:1]
    by_col: dict[tuple[str, str], tuple[int, tuple[Col, str]]] = {}
    for col, value in found:
        hops = _hops(ctx, placed, col.table)
        if hops is not None and col.key not in by_col:
            by_col[col.key] = (hops, (col, value))
    if not by_col:
        return []
    fewest = min(h for h, _ in by_col.values())
    return [pair for h, pair in by_col.values() if h == fewest]


def _hops(ctx: LinkContext, placed: Sequence[TableInfo], table: TableInfo) -> int | None:
    """Joins from the nearest of ``placed`` to ``table`` (0 for one of them); None when
    no path reaches it."""
    if table in placed:
        return 0
    paths = [ctx.graph.path(t.qualified, table.qualified) for t in placed]
    lengths = [len(p) for p in paths if p is not None]
    return min(lengths) if lengths else None


def find_value(ctx: LinkContext, tok: Tok, toks: list[Tok], plan: Plan) -> tuple[Col, str] | None:
    shouted = tok.text.isupper() and len(tok.text) >= 2
    if not tok.quoted and not shouted and (tok.low in STOP_WORDS or len(tok.low) < 2):
        return None
    if not tok.quoted and _ends_column_name(ctx, tok, toks):
        return None
    candidates = list(ctx.vocab.values.get(tok.low, []))
    if not candidates and not tok.quoted and tok.text[:-1].isupper() and tok.low[-1:] == "s":
        candidates = list(ctx.vocab.values.get(tok.low[:-1], []))  # "CTOs" -> 'CTO'
    if not candidates and not tok.quoted and len(tok.low) >= 5:
        for value, cols in ctx.vocab.values.items():
            if len(value) >= 4 and tok.low.startswith(value) and len(tok.low) - len(value) <= 3:
                candidates.extend(cols)
    found = candidates  # every stored value the word could be, joinable or not
    candidates = [p for p in candidates if joins_plan(ctx, plan, p[0].table)]
    if not candidates and not tok.quoted and len(tok.low) >= 3:
        inside = find_value_inside(ctx, tok)
        return inside if inside is None or joins_plan(ctx, plan, inside[0].table) else None
    if not candidates:
        if tok.quoted:
            col = text_column_near(ctx, tok, toks, plan)
            if col is not None:
                return col, f"{{c}} = {lit(tok.text)}"
        return None
    # the noun after the value, or before it, names the table or column
    context = [t.stem for t in toks if abs(t.start - tok.start) < 40 and t is not tok]
    index = toks.index(tok)
    following = [t.stem for t in toks[index + 1 : index + 3] if not t.quoted]
    held_by = _noun_placing(toks, index)
    tables = fact_candidates(ctx, plan)

    def score(pair: tuple[Col, str]) -> float:
        col, _ = pair
        s = ctx.vocab.column_score(context, col) + ctx.vocab.table_score(context, col.table)
        s += 1.5 * max((ctx.vocab.table_score([w], col.table) for w in following), default=0)
        if held_by is not None:
            s += 2.0 * ctx.vocab.table_score([held_by], col.table)
        if col.table in tables:
            s += 0.5
        return s

    col, value = max(candidates, key=score)
    names_something = names_schema_word(ctx, tok.stem)
    # one value in one table (a code and a name column may both hold 'EMEA')
    unique = (
        len({c.table.qualified for c, _ in found}) == 1
        and len({v.lower() for _, v in found}) == 1
        and (len(tok.low) >= 4 or tok.text.isupper())
        and not names_something
    )
    if not tok.quoted and not unique and score((col, value)) < 0.5 and col.table not in tables:
        return None
    return col, f"{{c}} = {lit(value)}"


def _ends_column_name(ctx: LinkContext, tok: Tok, toks: list[Tok]) -> bool:
    """Whether ``tok`` and the word before it spell a column's name ("employee id" is
    ``employee_id``): the word says which column, it is no stored value of another one
    ('Id', a region's code)."""
    index = toks.index(tok)
    if index == 0 or toks[index - 1].quoted:
        return False
    name = f"{toks[index - 1].low}_{tok.low}"
    return any(c.column.name.lower() == name for c in ctx.vocab.columns)


# The prepositions that place a noun's rows at a value: "the customers in Argentina",
# "suppliers from Japan", "the airports at Denver". Grammar, no word of a schema.
_PLACING = frozenset(["in", "from", "at"])


def _noun_placing(toks: list[Tok], index: int) -> str | None:
    """The noun said right before "in/from/at <value>" ("customers" in "the customers in
    Argentina"): the value is a property of that noun's rows, so where the value is stored
    in several tables ('Argentina' in ``customers.country`` and ``orders.ship_country``)
    the named table's column holds it, not the counted table's."""
    if index < 2 or toks[index - 1].low not in _PLACING or toks[index - 2].quoted:
        return None
    return toks[index - 2].stem


def joins_plan(ctx: LinkContext, plan: Plan | Measure, table: TableInfo) -> bool:
    """Whether a table some word's value lives in can be joined to the tables the plan
    already reads (its measures and listed columns; or, given one measure, the tables it
    reads). A value in a table no join path reaches is not the question's value, however
    exactly it is spelled: beside a look-alike copy of another database, a track titled
    'Honolulu' or a genre 'Opera' would otherwise take the word and leave a statement
    that cannot be composed, where the next reading (the airport whose name holds the
    word, or no value at all) can. The one test of it: a value word (``find_value``), a
    proper name (``proper_names``) and a counted value (``read_measure``) all ask here."""
    if isinstance(plan, Measure):
        return joins_any(ctx, measure_tables(plan), table)
    placed = [t for m in plan.measures for t in measure_tables(m)]
    return joins_any(ctx, [*placed, *(d.col.table for d in plan.dims)], table)


def measure_tables(measure: Measure) -> list[TableInfo]:
    """The tables a measure reads: its column's, the table it counts, those it joins."""
    found = (measure.col.table if measure.col else None, measure.table, *measure.tables)
    return [t for t in found if t is not None]


def joins_any(ctx: LinkContext, placed: Sequence[TableInfo], table: TableInfo) -> bool:
    """Whether ``table`` is one of ``placed`` or a join path reaches one of them (true
    when nothing is placed yet: nothing to join to)."""
    if not placed or table in placed:
        return True
    return any(ctx.graph.path(table.qualified, t.qualified) is not None for t in placed)


def mentioned_before(ctx: LinkContext, table: TableInfo, at: int) -> bool:
    words = [stem(t.low) for t in tokenize(ctx.question[:at]) if not t.quoted]
    return any(
        ctx.vocab.table_score(words[j : j + len(n) + 1], table) >= 0.99
        for n in ctx.vocab.table_names(table)
        for j in range(len(words))
    )


def find_value_inside(ctx: LinkContext, tok: Tok) -> tuple[Col, str] | None:
    """A word found in exactly one multi-word stored value, held in no other column's
    values and naming nothing else in the schema ("deals won" -> stage 'Closed Won').
    Not a value the question says in less than half of its words ("which pitcher" is no
    award 'TSN Pitcher of the Year'): a title that merely contains the word is another
    thing, and the word is left to the other readings (the verifier refuses such a
    value wherever it comes from)."""
    inside = set(ctx.vocab.value_words.get(lemma(tok.low), []))
    if len(inside) != 1 or tok.low in GRAMMAR_WORDS or tok.stem in GRAMMAR_WORDS:
        return None
    if names_schema_word(ctx, tok.stem) and not verb_not_name(ctx, tok):
        return None
    col, value = next(iter(inside))
    if said_in_part(value, ctx.low):
        return None
    if value.lower() in ctx.low:
        return col, f"{{c}} = {lit(value)}"
    held = ctx.vocab.held_words.get(lemma(tok.low), {})
    if set(held) - {col.key}:
        # "flew to Denver": 'America/Denver' is the one time zone with the word, but an
        # airport's name ('Denver Intl') holds it too (a question that spells the whole
        # value says which it means)
        return _proper_name_holder(tok, held)
    return col, f"{{c}} = {lit(value)}"


def _proper_name_holder(
    tok: Tok, held: dict[tuple[str, str], list[tuple[Col, str]]]
) -> tuple[Col, str] | None:
    """Of several columns whose values hold the word, the one a proper name means: a
    capitalised word ("Denver") names one thing, and of the columns holding it the one
    with the most distinct values read is the one that tells rows apart (an airport's
    name, not the time zone many airports share). It is taken only where one of its
    values holds the word; a lower-case word, or a name in several values, says nothing
    certain and is left unread."""
    if not tok.text[:1].isupper() or tok.start == 0:
        return None

    def spread(pairs: list[tuple[Col, str]]) -> int:
        column = pairs[0][0].column
        return len(column.known_values) + len(column.sample_values)

    ranked = sorted(held.values(), key=spread, reverse=True)
    if len(ranked) > 1 and spread(ranked[0]) == spread(ranked[1]):
        return None
    values = {value for _, value in ranked[0]}
    if len(values) != 1:
        return None
    col, value = ranked[0][0]
    return col, f"{{c}} = {lit(value)}"


def verb_not_name(ctx: LinkContext, tok: Tok) -> bool:
    """A verb form ("were lost") that is only part of a longer name ("lost_reason")
    and not followed by that name's other words is the state, not the column."""
    if lemma(tok.low) == tok.low or (lemma(tok.low) == tok.stem and tok.low == tok.stem):
        return False
    toks = tokenize(ctx.question)
    after = [t.stem for t in toks if t.start > tok.start][:2]
    for parts in [*ctx.vocab.table_words.values(), *ctx.vocab.column_words.values()]:
        if any(word_match(tok.stem, p) >= 0.9 for p in parts):
            rest = [p for p in parts if word_match(tok.stem, p) < 0.9]
            if not rest or any(word_match(a, p) >= 0.9 for a in after for p in rest):
                return False
    return True


def names_schema_word(ctx: LinkContext, word: str) -> bool:
    """Whether the word is (a form of) a part of any table or column name."""
    return any(
        word_match(word, p) >= 0.9
        for parts in [
            *ctx.vocab.table_words.values(),
            *ctx.vocab.column_words.values(),
            *(a for aliases in ctx.vocab.table_aliases.values() for a in aliases),
            *(a for aliases in ctx.vocab.column_aliases.values() for a in aliases),
        ]
        for p in parts
    )


def text_column_near(ctx: LinkContext, tok: Tok, toks: list[Tok], plan: Plan) -> Col | None:
    index = toks.index(tok)
    window = [
        t.stem
        for t in toks[max(0, index - 4) : index + 4]
        if not t.quoted and t.low not in STOP_WORDS
    ]
    best: tuple[float, Col] | None = None
    for col in ctx.vocab.columns:
        if is_number(col.column.data_type) or is_temporal(col.column.data_type):
            continue
        s = ctx.vocab.column_score(window, col)
        if s > 0.5 and (best is None or s > best[0]):
            best = (s, col)
    return best[1] if best else None


def refers_to_rows(ctx: LinkContext, col: Col) -> bool:
    """A column holding another table's keys (a declared or inferred reference): an
    identifier, no quantity to compare with a number."""
    return any(
        e.child == col.table.qualified and col.column.name in e.child_columns
        for e in ctx.graph.edges_of(col.table.qualified)
    )
