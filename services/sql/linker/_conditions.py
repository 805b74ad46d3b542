"""Conditions: stored and quoted values, proper names, comparisons with numbers and
years, anti- and semi-joins, text patterns, flags and documented states, and the
instructions' matching and null rules."""

from __future__ import annotations

import itertools
import re

from services.sql.catalog import is_number
from services.sql.linker._clock import clock_filters
from services.sql.linker._context import LinkContext
from services.sql.linker._dates import date_column, date_filters, year_column, year_or_date
from services.sql.linker._lookup import (
    fact_candidates,
    find_column,
    find_value,
    joins_plan,
    label_columns,
    mentioned_before,
    named_tables,
    refers_to_rows,
    text_column,
)
from services.sql.linker._negated import NOT_BEFORE_VALUE, one_per_row
from services.sql.linker._never import negated_events
from services.sql.linker._plan import (
    Measure,
    Plan,
    is_key,
    like_pattern,
    lit,
    measures_in,
)
from services.sql.linker._terms import sql_conditions, term_spans
from services.sql.linker._vocabulary import Col, column_states, negate_state
from services.sql.words import (
    STOP_WORDS,
    Tok,
    lemma,
    stem,
    tokenize,
    word_match,
)


def link_conditions(ctx: LinkContext, plan: Plan, text: str, toks: list[Tok]) -> None:
    low = ctx.low
    used: set[str] = set()
    for measure in plan.measures:
        for inner in measures_in(measure):
            if inner.filter is not None:
                used |= {v.lower() for v in re.findall(r"'((?:[^']|'')*)'", inner.filter[1])}
    date_filters(ctx, plan)
    # anti-joins: "who have not made any transactions", "that do not have any X", "no X"
    for m in re.finditer(
        r"\b(?:not|never)\s+(?:\w+\s+){0,3}?(?:any|a)\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in|with|based)\b|$)|\bhave no\s+([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in)\b|$)|\bwithout (?:any\s+)?([a-z ]+?)(?=[,.?;]|\s+(?:and|by|from|in)\b|$)",
        low,
    ):
        phrase = next(g for g in m.groups() if g)
        words = [stem(w) for w in phrase.split() if w not in STOP_WORDS]
        hits = ctx.vocab.tables_named(words) or ctx.vocab.tables_named(words[-1:])
        if hits:
            plan.anti.append(hits[0][0])
    # "products that have never been ordered": the verb names the related table
    for m in re.finditer(r"\b(?:not|never)\s+(?:been\s+|be\s+)?([a-z]{3,}?)(?:ed|d)\b", low):
        hits = ctx.vocab.tables_named([stem(m.group(1))]) or ctx.vocab.tables_named(
            [stem(m.group(1) + "e")]
        )
        if hits and hits[0][0] not in plan.anti:
            plan.anti.append(hits[0][0])
    negated_events(ctx, plan)
    used |= patterns(ctx, plan)
    key_literals(ctx, plan)
    spans = term_spans(ctx)
    used |= proper_names(ctx, plan, toks, used, spans)
    # quoted and stored values
    for tok in toks:
        if tok.low in used or tok.low in ctx.computed or any(a <= tok.start < b for a, b in spans):
            continue
        found = find_value(ctx, tok, toks, plan)
        if found is not None:
            plan.filters.append(found)
            used.add(tok.low)
    negated_values(ctx, plan)
    clock_filters(ctx, plan)
    comparisons(ctx, plan)
    sql_conditions(ctx, plan)
    link_flags(ctx, plan)
    documented_states(ctx, plan, term_spans(ctx))
    # a listing shows the numbers it was filtered on by a range: ``results.with_deciding``,
    # applied to every reading's statement (``QuestionLinker.link``), as to a follow-up's
    matching_rules(ctx, plan)
    null_rules(ctx, plan)


def link_flags(ctx: LinkContext, plan: Plan) -> None:
    """Boolean columns the question names ("primary contacts" -> primary_contact,
    "inactive" / "not active" -> NOT active)."""
    tables = [*fact_candidates(ctx, plan), *ctx.named]
    toks = tokenize(ctx.question)
    for table in dict.fromkeys(tables):
        own = {p for name in ctx.vocab.table_names(table) for p in name}
        for column in table.columns:
            if column.data_type != "boolean":
                continue
            col = Col(table, column)
            parts = [p for p in ctx.vocab.column_words[col.key] if p not in own and p != "is"]
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


def documented_states(ctx: LinkContext, plan: Plan, spans: list[tuple[int, int]]) -> None:
    """States the schema's comments define: a flag "False when the product is
    discontinued", a date "When the account was archived (churned); NULL for active
    accounts". The question's word for the state becomes the condition."""
    tables = [*fact_candidates(ctx, plan), *ctx.named]
    toks = [
        t
        for t in tokenize(ctx.question)
        if not t.quoted and not any(a <= t.start < b for a, b in spans)
    ]
    filtered = {c.key for c, _ in plan.filters}
    for table in dict.fromkeys(tables):
        own = {p for name in ctx.vocab.table_names(table) for p in name}
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
                negated = re.search(r"\b(?:not|non|no|never)(?:\s+(?:been|be|being|yet))?$", before)
                plan.filters.append((col, negate_state(state) if negated else state))
                filtered.add(col.key)
                ctx.known.add(toks[hit].stem)
                ctx.known.add(toks[hit].low)
                break


def null_rules(ctx: LinkContext, plan: Plan) -> None:
    """ "only include rows with non-null X for both": the measured columns must be
    present."""
    if not re.search(r"\bnon[- ]?null\b|\bnot null\b", ctx.instructions, re.I):
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


def matching_rules(ctx: LinkContext, plan: Plan) -> None:
    """Instructions that say how to compare text ("country should be matched
    case-insensitively", "category ... with wildcards") turn equality on the columns
    they name into ILIKE: exact but case-blind, or a substring with wildcards."""
    for sentence in re.split(r"(?<=[.;])\s+|\n+", ctx.instructions):
        low = sentence.lower()
        wildcard = bool(re.search(r"wildcard|partial match|like '%", low))
        blind = wildcard or bool(re.search(r"case[- ]?insensitiv", low))
        if not blind:
            continue
        named: set[tuple[str, str]] = set()
        head = re.split(r"\b(?:should|must|are|is|to be|match|matched)\b", sentence, maxsplit=1)[0]
        for phrase in re.split(r",|\band\b|\bor\b|\bwhen using\b", head, flags=re.I):
            col = text_column(ctx, phrase)
            if col is not None:
                named.add(col.key)
        for ref in re.findall(r"\b(\w+)\.(\w+)\b", sentence):
            for col in ctx.vocab.columns:
                if col.table.name == ref[0].lower() and col.column.name == ref[1].lower():
                    named.add(col.key)
        for i, (col, cond) in enumerate(plan.filters):
            m = re.fullmatch(r"\{c\} = '((?:[^']|'')*)'", cond)
            if m and col.key in named:
                value = like_pattern(m.group(1).replace("''", "'"))
                shape = f"%{value}%" if wildcard else value
                plan.filters[i] = (col, f"{{c}} ILIKE {lit(shape)}")


def patterns(ctx: LinkContext, plan: Plan) -> set[str]:
    """Text patterns: "name starts with 'J'", "last name contains 'son'", "state ending
    with the letter 'a'", "'Ford' in their make name", "a .com email address". Matched
    case-insensitively (ILIKE); conditions joined by "or" in the question are OR-ed."""
    quote = ctx.question
    conds: list[tuple[int, int, Col, str]] = []
    used: set[str] = set()
    literal = (
        r"(?:the\s+(?:letter|letters|string|text|word)\s+)?(?:'([^']+)'|\"([^\"]+)\"|([^\s,?'\"]+))"
    )
    cues = [
        (r"\b(?:starts?|starting|begins?|beginning)\s+with\s+", "{v}%"),
        (r"\b(?:ends?|ending)\s+(?:with|in)\s+", "%{v}"),
        (r"\b(?:contains?|containing)\s+", "%{v}%"),
    ]
    found: list[tuple[int, int, str]] = []
    for cue, shape in cues:
        for m in re.finditer(cue + literal, quote, re.I):
            value = (m.group(1) or m.group(2) or m.group(3) or "").strip()
            if value:
                found.append((m.start(), m.end(), shape.format(v=like_pattern(value))))
                used.add(value.lower())
    found.sort()
    previous: Col | None = None
    last_end = 0
    for start, end, pattern in found:
        subject = quote[max(last_end, start - 45) : start]
        subject = re.split(r"\b(?:or|and)\b", subject)[-1]
        col = text_column(ctx, subject) or previous
        last_end = end
        if col is None:
            continue
        previous = col
        conds.append((start, end, col, f"{{c}} ILIKE {lit(pattern)}"))
    for m in re.finditer(
        r"['\"]([^'\"]+)['\"]\s+in\s+(?:the|their|its|his|her)\s+([A-Za-z_][\w ]{0,30}?)(?=[,.?;]|\s+(?:or|and)\b|$)",
        quote,
        re.I,
    ):
        col = text_column(ctx, m.group(2))
        if col is not None:
            conds.append(
                (
                    m.start(),
                    m.end(),
                    col,
                    f"{{c}} ILIKE {lit('%' + like_pattern(m.group(1)) + '%')}",
                )
            )
            used.add(m.group(1).lower())
    for m in re.finditer(
        r"\b(?:a|an|with)\s+(\.[a-z]{2,6})\s+([a-z_][\w ]{0,30}?)(?=[,.?;]|\s+(?:or|and|who|that|bought|have)\b|$)",
        quote,
        re.I,
    ):
        col = text_column(ctx, m.group(2))
        if col is not None:
            conds.append(
                (m.start(), m.end(), col, f"{{c}} ILIKE {lit('%' + like_pattern(m.group(1)))}")
            )
            used.add(m.group(1).lower().lstrip("."))
    if not conds:
        return used
    conds.sort(key=lambda c: c[0])
    groups: list[list[tuple[int, int, Col, str]]] = [[conds[0]]]
    for prev, cur in itertools.pairwise(conds):
        between = quote[prev[1] : cur[0]].lower()
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


def key_literals(ctx: LinkContext, plan: Plan) -> None:
    """ "merchant with ID 1", "customer id 42": the named table's key equals the number."""
    for m in re.finditer(r"\b([a-z]+)\s+(?:with\s+)?(?:the\s+)?id\s+(?:of\s+)?(\d+)\b", ctx.low):
        hits = ctx.vocab.tables_named([stem(m.group(1))])
        if not hits or len(hits[0][0].primary_key) != 1:
            continue
        table = hits[0][0]
        key = table.column(table.primary_key[0])
        if key is not None:
            plan.filters.append((Col(table, key), f"{{c}} = {int(m.group(2))}"))


def link_semi(ctx: LinkContext, plan: Plan, cond_text: str) -> None:
    """Tables a listing's conditions name ("customers who made a purchase, based on
    joining the customers and sales tables") restrict it to rows that join them."""
    if plan.measures or not plan.dims:
        return
    in_plan = {d.col.table.qualified for d in plan.dims} | {
        c.table.qualified for c, _ in plan.filters
    }
    anti = {t.qualified for t in plan.anti}
    toks = tokenize(cond_text)
    for table in named_tables(ctx.vocab, toks):
        if table.qualified not in in_plan and table.qualified not in anti:
            plan.semi.append(table)


def proper_names(
    ctx: LinkContext, plan: Plan, toks: list[Tok], seen: set[str], spans: list[tuple[int, int]]
) -> set[str]:
    """Names the value index holds ("contacts at Cobalt Academy"): the longest run of
    words equal to one stored value, capitalised or quoted when it is a single word
    (a lower-case word is more likely a word than a name). Returns the words used."""
    used: set[str] = set()
    taken: set[int] = set()
    for i, col, value, size in called_names(ctx, toks):
        # "companies named Acme GmbH": the name column of the table just named, even
        # for a name the value index has not seen yet (a row added since it loaded)
        plan.filters.append((col, f"{{c}} = {lit(value)}"))
        taken |= {i + k for k in range(size)}
        used |= {t.low for t in toks[i - 1 : i + size]}  # the cue word too
    if not ctx.vocab.names:
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
            found = ctx.vocab.names.get(phrase)
            if not found:
                continue
            tables = {c.table.qualified for c, _ in found}
            if len(tables) > 1:
                named = [c for c, _ in found if c.table in ctx.named]
                if len({c.table.qualified for c in named}) != 1:
                    continue
                found = [(c, v) for c, v in found if c.table in ctx.named]
            col, value = found[0]
            if not joins_plan(ctx, plan, col.table):
                continue  # a name in a table the plan's cannot join is some other thing's
            plan.filters.append((col, f"{{c}} = {lit(value)}"))
            taken |= {i + k for k in range(size)}
            used |= {t.low for t in window}
    return used


def called_names(ctx: LinkContext, toks: list[Tok]) -> list[tuple[int, Col, str, int]]:
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
                gap = ctx.question[run[-1].end : nxt.start]
                if gap.strip() or not nxt.text[:1].isupper():
                    break
                run.append(nxt)
        before = [t for t in ctx.named if mentioned_before(ctx, t, tok.start)]
        if not before:
            continue
        table = before[-1]
        column = next(
            (
                c.column
                for c in label_columns(ctx, table)
                if not is_key(c) and not is_number(c.column.data_type)
            ),
            None,
        )
        if column is None:
            continue
        value = ctx.question[run[0].start : run[-1].end].strip("'\"")
        found.append((i + 1, Col(table, column), value, len(run)))
    return found


def comparisons(ctx: LinkContext, plan: Plan) -> None:
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
        ctx.low,
    ):
        words = [stem(w) for w in m.group(3).split() if w not in STOP_WORDS]
        hits = ctx.vocab.tables_named(words) or ctx.vocab.tables_named(words[:1])
        if not hits:
            continue
        counted = Measure("COUNT", table=hits[0][0], label=m.group(3))
        plan.having.append((counted, ops[m.group(1)], int(m.group(2))))
    with_counts(ctx, plan)
    for m in re.finditer(
        r"\b([a-z][a-z ]*?)\s+(over|above|greater than|more than|exceeding|under|below|less than|at least|at most)\s+\$?([\d,]+(?:\.\d+)?)",
        ctx.low,
    ):
        words = [stem(w) for w in m.group(1).split() if w not in STOP_WORDS][-3:]
        col = find_column(ctx, words, numeric=True) if words else None
        if col is not None and any(c.key == col.key for c, _ in plan.filters):
            col = _own_noun(ctx, m.end())
        if col is None or is_key(col) or refers_to_rows(ctx, col):
            continue
        plan.filters.append((col, f"{{c}} {ops[m.group(2)]} {m.group(3).replace(',', '')}"))
    # "contacts without an email", "with no phone": the column is empty (only when asked)
    for m in re.finditer(
        r"\b(?:without|with no|missing|lacking)\s+(?:a|an|any)?\s*([a-z]+(?:\s[a-z]+)?)",
        ctx.low,
    ):
        words = [stem(w) for w in m.group(1).split() if w not in STOP_WORDS]
        if not words or ctx.vocab.tables_named(words):
            continue  # a related table: an anti-join, handled with the conditions
        col = find_column(ctx, words)
        if col is not None and not is_key(col):
            plan.filters.append((col, "{c} IS NULL"))
    # "since the start of 2000": the year's first day is the bound, whichever the word
    for m in re.finditer(
        r"\b(before|after|since|until|prior to)\s+(?P<start>the\s+(?:start|beginning)\s+of\s+)?"
        r"(?P<year>\d{4})\b(?!-)",
        ctx.low,
    ):
        year = int(m.group("year"))
        start = bool(m.group("start"))
        if not 1900 <= year <= 2200:
            continue
        near = ctx.low[max(0, m.start() - 40) : m.start()]
        col = date_column(ctx, plan, near=near)
        if col is not None and year_or_date(ctx, plan, col, near):
            col = None  # the words name the table's year column, not its date
        if col is None:
            # a year column whose values are all years: the year said, compared as said
            held = year_column(ctx, plan, near=near)
            if held is not None and not re.search(
                r"\b(?:before|after|since|until|prior to)\s+\d{4}\s+or\b|\bor\s+(?:before|after|since|until|prior to)\s+\d{4}\b",
                ctx.low,
            ):  # "after 2013 or before 2008": one of two, not both; left to be refused
                op = {"before": "<", "until": "<", "prior to": "<", "after": ">", "since": ">="}
                said = ">=" if start and m.group(1) == "after" else op[m.group(1)]
                plan.filters.append((held, f"{{c}} {said} {year}"))
            continue
        bound = {"before": "<", "until": "<", "prior to": "<", "after": ">=", "since": ">="}[
            m.group(1)
        ]
        first = year + 1 if m.group(1) == "after" and not start else year
        plan.filters.append((col, f"{{c}} {bound} {lit(f'{first}-01-01')}"))


def _own_noun(ctx: LinkContext, end: int) -> Col | None:
    """ "planes with 2 engines had more than 100 seats": the column the words before a
    comparison name ("engines") already has its own number ("with 2 engines"), so this
    number is another column's; the one its own noun, said right after it, names
    exactly (``seats``), on a table the question names. None (the number unread, the
    question refused) where that noun names no such column: before, the comparison
    went to the column before it (``engines > 100``)."""
    after = re.match(r"\s+([a-z]+)", ctx.low[end:])
    if after is None or after.group(1) in STOP_WORDS:
        return None
    col = find_column(ctx, [stem(after.group(1))], numeric=True, threshold=1.0)
    named = {t.qualified for t in ctx.named}
    if col is None or col.table.qualified not in named:
        return None
    return col


def with_counts(ctx: LinkContext, plan: Plan) -> None:
    """ "planes with 2 engines": a number, then a column of the named table that holds
    numbers, is that column's value (``engines = 2``), as the clause reader reads it;
    read here too because a question the clause reader declines for another phrase
    ("… were built before 1990") came here without it, refused for the number it lost.
    Words naming a table instead count its rows ("customers with 5 orders"), not this;
    a bound before the number ("with at least 5") is read above."""
    for m in re.finditer(r"\bwith\s+(\d+)\s+([a-z]+(?:\s[a-z]+)?)", ctx.low):
        words = [stem(w) for w in m.group(2).split() if w not in STOP_WORDS]
        if not words or ctx.vocab.tables_named(words[:1]):
            continue
        named = {t.qualified for t in ctx.named}
        col = find_column(ctx, words[:1], numeric=True, threshold=1.0)
        if col is None or col.table.qualified not in named or refers_to_rows(ctx, col):
            continue
        plan.filters.append((col, f"{{c}} = {int(m.group(1))}"))


# "not operated by", "not from", "not made by": a "not" before a verb (or none) and the
# preposition that introduces the value the row does not have
def negated_values(ctx: LinkContext, plan: Plan) -> None:
    """ "flights not operated by American Airlines Inc.": a stored value said right after
    a negated verb and its preposition is the one value the rows do not have
    (``<> 'American Airlines Inc.'``), where each row has one such value: the column is
    of a table the question's rows reference (``flights.carrier`` to ``airlines``), or of
    that table itself. A table that references the value's instead holds many per row
    ("airlines not flying to BOS": none of their flights, or some not?), and is left as
    read, for the verifier to refuse the unapplied "not"; so is a value said in a list
    ("not from France or Spain"), which no one inequality says."""
    for k, (col, cond) in enumerate(plan.filters):
        m = re.fullmatch(r"\{c\} = '((?:[^']|'')*)'", cond)
        if m is None:
            continue
        value = m.group(1).replace("''", "'").lower()
        at = ctx.low.find(value)
        if at < 0 or ctx.low.find(value, at + 1) >= 0 or not NOT_BEFORE_VALUE.search(ctx.low[:at]):
            continue
        after = ctx.low[at + len(value) :]
        if re.match(r"\s*(?:,|or\b|and\b|nor\b)", after) or any(
            other.key == col.key for j, (other, _) in enumerate(plan.filters) if j != k
        ):
            continue  # "not from France or Spain": not one inequality
        if not one_per_row(ctx, col):
            continue
        plan.filters[k] = (col, f"{{c}} <> '{m.group(1)}'")
