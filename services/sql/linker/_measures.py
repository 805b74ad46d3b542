"""Measures: counts, sums, averages, extremes, arithmetic over measure phrases, elapsed
time between two dates, ranks, and measures a definition names."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sqlglot import exp

from services.sql.catalog import TableInfo, is_number
from services.sql.definitions import trim_definition
from services.sql.linker._context import LinkContext
from services.sql.linker._lookup import (
    find_column,
    find_value_word,
    joins_plan,
    measure_tables,
    tables_headed,
    values_nearest,
    without_names,
)
from services.sql.linker._plan import (
    Measure,
    finish,
    is_key,
    is_temporal,
    lit,
    only_table,
)
from services.sql.linker._reading import clean_item
from services.sql.linker._terms import is_condition, sql_measure
from services.sql.linker._vocabulary import Col
from services.sql.words import (
    AGGREGATE_WORDS,
    MONTHS,
    STOP_WORDS,
    stem,
    word_match,
)

COUNT_CUES = ("number of", "count of", "how many", "num of", "no. of", "total count of")

# A month or quarter said in a measure's words ("buys per ticker in april 2023", "buys in
# Q1 2023 per ticker", "… in the first quarter of 2023"): the date reader's window, no
# word of the rows counted nor of the grouping a "per" phrase names. A bare year is left
# to the words (a year column may be what they count by).
_WINDOW = re.compile(
    r"\s+(?:in|during)\s+(?:the\s+)?(?:(?:first|second|third|fourth)\s+quarter\s+of\s+"
    rf"|q[1-4]\s+|(?:{'|'.join(sorted(MONTHS, key=len, reverse=True))})\s+(?:of\s+)?)\d{{4}}\b"
)


def read_ranked(ctx: LinkContext, phrase: str) -> Measure | None:
    """A defined rank ("SR = sales rank of each salesperson ordered by their total sales
    amount descending"): RANK() over the measure it orders by, within a column when
    the definition says "within their …"."""
    name = clean_item(phrase).strip()
    for entry in ctx.glossary:
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
        measure = read_measure(ctx, m.group(1)) or read_measure(ctx, "total " + m.group(1))
        if measure is None:
            return None
        partition: Col | None = None
        within = re.search(r"\bwithin (?:their|its|the|each)\s+([a-z ]+?)(?=\s+by\b|[,.;]|$)", low)
        if within:
            words = [stem(w) for w in within.group(1).split() if w not in STOP_WORDS]
            partition = find_column(ctx, words)
            if partition is None:
                return None
        ascending = bool(
            re.search(r"\bascending\b|\blowest\b[^.]*\brank 1\b|rank 1[^.]*\blowest\b", low)
        )
        if entry.term not in ctx.applied:
            ctx.applied.append(entry.term)
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


def read_measure(ctx: LinkContext, low: str, *, depth: int = 0) -> Measure | None:
    low = re.sub(r"^(?:the\s+)?", "", low)
    func = ""
    rest = low
    low = low.replace("_", " ")
    for cue in COUNT_CUES:
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
                rf"(?:the\s+)?(?:\w+\s+){{0,2}}?({'|'.join(AGGREGATE_WORDS)})\s+(?:of\s+)?(.*)",
                low,
            )
            if m:
                func = AGGREGATE_WORDS[m.group(1)]
                rest = m.group(2)
                low = f"{m.group(1)} {rest}"
            else:
                m = re.match(r"(.*?)\s+(total|sum)$", low)
                if m:
                    func, rest = "SUM", m.group(1)
    if not func:
        return read_defined(ctx, low, depth) if depth < 2 else None
    between = re.match(
        r"(?:number of\s+)?(days|hours|minutes|seconds)\s+between\s+(.+?)\s+and\s+(.+)$",
        rest.strip(),
    )
    if between:
        return read_elapsed(ctx, func, between.group(1), (between.group(2), between.group(3)), rest)
    distinct = False
    m = re.match(r"\s*(distinct|unique)\s+(.*)", rest)
    if m:
        distinct, rest = True, m.group(2)
    label = rest
    rest = _WINDOW.sub("", rest)
    per = re.search(r"\s+(?:per|for each|for every)\s+((?:\w+\s+){0,2}\w+)$", rest)
    prefer: list[TableInfo] = []
    if per:
        rest = rest[: per.start()]
        per_words = [stem(w) for w in per.group(1).split() if w not in STOP_WORDS]
        prefer = [t for t, _ in ctx.vocab.tables_named(per_words)]
        prefer += [t for t, _ in ctx.vocab.tables_named(per_words[:1]) if t not in prefer]
    joined: list[TableInfo] = []
    having = re.search(r"\s+(?:with|having)\s+(?:a\s+|an\s+|any\s+)?(\w+)$", rest)
    if having:
        hits = ctx.vocab.tables_named([stem(having.group(1))])
        if hits:
            # "customers with transactions": only those that join the other table
            rest = rest[: having.start()]
            joined = [hits[0][0]]
    words = [stem(w) for w in re.findall(r"[a-z0-9]+", rest) if w not in STOP_WORDS]
    if func == "COUNT":
        unnamed = [stem(w) for w in re.findall(r"[a-z0-9]+", without_names(ctx, rest))]
        unnamed = [w for w in unnamed if w not in STOP_WORDS and w not in ("number", "count")]
        if unnamed:
            words = unnamed  # the rows a name is said of are counted, not the name's table
    words = [w for w in words if w not in ("number", "count")]
    cue_word = low.split()[0] if low.split() else ""
    threshold = 0.5
    if func == "COUNT":
        for i, w in enumerate(list(words)):
            hit = None if w in ctx.in_names else find_value_word(ctx, w)
            if hit is not None and len(words) > 1:
                col, value = hit
                equals = f"{{c}} = {lit(value)}"
                words = words[:i] + words[i + 1 :]
                got = read_measure(ctx, "number of " + " ".join(words), depth=depth + 1)
                # a value no join reaches from what is counted is not a condition on it
                if got is not None and joins_plan(ctx, got, col.table):
                    near = values_nearest(ctx, w, measure_tables(got))
                    if len(near) > 1:
                        return None  # equally near the counted rows: not guessed
                    if near:
                        col, equals = near[0][0], f"{{c}} = {lit(near[0][1])}"
                    got.filter = (col, equals)
                    return finish(got, label, joined)
        if not words:
            return finish(Measure("COUNT", label="count"), label, joined)
        quantity = find_column(ctx, words, numeric=True, threshold=0.99)
        tables = ctx.vocab.tables_named(words) or tables_headed(ctx, words)
        if quantity is not None and not tables:
            # "number of shares" is a quantity column, not a count
            func = "SUM" if cue_word == "total" else "COUNT_COL"
            return finish(Measure(func, col=quantity, label=rest), label, joined)
        if tables:
            func = "COUNT_DISTINCT" if distinct else "COUNT"
            return finish(Measure(func, table=tables[0][0], label=rest), label, joined)
        partial = [
            t
            for t in ctx.catalog.tables
            if len(words) == 1
            and any(
                word_match(words[0], p) >= 0.9 for name in ctx.vocab.table_names(t) for p in name
            )
        ]
        if len(partial) == 1:
            # "transactions" -> wallet_transactions_daily, the one table it names a part of
            func = "COUNT_DISTINCT" if distinct else "COUNT"
            return finish(Measure(func, table=partial[0], label=rest), label, joined)
        kind = find_value_word(ctx, words[0]) if len(words) == 1 else None
        if kind is not None:
            # "how many emails": rows whose kind is the stored value 'Email'
            col, value = kind
            counted = Measure("COUNT", table=col.table, label=rest)
            counted.filter = (col, f"{{c}} = {lit(value)}")
            return finish(counted, label, joined)
        named = find_column(ctx, words)
        if named is not None and named.table in partial and len(rest.split()) == 1:
            # "how many payments" with payments_made and payments_received: the one word
            # names the rows of more than one table, so it counts rows — of the table
            # whose column it came nearest — not the non-null values of payment_date,
            # the same count a follow-up that regroups "payments received" makes ("how
            # many payment dates" says the column and counts its values)
            func = "COUNT_DISTINCT" if distinct else "COUNT"
            return finish(Measure(func, table=named.table, label=rest), label, joined)
        if named is not None:
            func = "COUNT_DISTINCT" if distinct else "COUNT_COL"
            return finish(Measure(func, col=named, label=rest), label, joined)
        return read_defined(ctx, rest, depth, func) if depth < 2 else None
    if not words:
        return None
    condition: tuple[Col, str] | None = None
    value_word = ""
    for i, w in enumerate(words):
        hit = find_value_word(ctx, w) if len(words) > 1 else None
        if hit is not None and not find_column(ctx, [w], numeric=True):
            condition = (hit[0], f"{{c}} = {lit(hit[1])}")
            value_word = w
            words = words[:i] + words[i + 1 :]
            break
    named_table = ctx.vocab.tables_named(words) if func == "SUM" else []
    if named_table and only_table(words, named_table, ctx.vocab):
        # "total payments received": how many rows, not a sum of some amount
        return finish(Measure("COUNT", table=named_table[0][0], label=rest), label, joined)
    found = find_column(ctx, [cue_word, *words], prefer, numeric=True, threshold=threshold)
    if found is None:
        found = table_measure(ctx, words)
    if found is None:
        defined = read_defined(ctx, rest, depth, func) if depth < 2 else None
        if defined is not None:
            return defined
        found = find_column(ctx, words)
        if found is None or func not in ("MAX", "MIN") or not is_temporal(found.column.data_type):
            if func == "SUM":
                tables = ctx.vocab.tables_named(words)
                if tables and len(words) == len(ctx.vocab.table_words[tables[0][0].qualified]):
                    return finish(Measure("COUNT", table=tables[0][0], label=rest), label, joined)
            return None
    if condition is not None:
        near = values_nearest(ctx, value_word, [found.table])
        if len(near) > 1:
            return None  # equally near the measured rows: not guessed
        # none: no join reaches the value from the measured rows, so it is no condition
        # on them ("the total amount of transactions": 'transaction' is a kind of
        # notification, a table the wallet's transactions do not join; the word names the
        # measured rows themselves), as the counted path above already holds
        condition = (near[0][0], f"{{c}} = {lit(near[0][1])}") if near else None
    return finish(Measure(func, col=found, label=rest, filter=condition), label, joined)


def read_elapsed(
    ctx: LinkContext, func: str, unit: str, dates: tuple[str, str], label: str
) -> Measure | None:
    """ "average number of days between the sale date and the payment date": the later
    date minus the earlier, in the unit asked for."""
    cols = []
    for phrase in dates:
        words = [stem(w) for w in re.findall(r"[a-z0-9]+", phrase) if w not in STOP_WORDS]
        col = None
        best = 0.0
        for candidate in ctx.vocab.columns:
            if not is_temporal(candidate.column.data_type):
                continue
            score = ctx.vocab.column_score(words, candidate)
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


def table_measure(ctx: LinkContext, words: Sequence[str]) -> Col | None:
    """ "sales amount", "order value": the one quantity a table holds, when the words
    name the table and nothing more specific."""
    rest = [w for w in words if w not in ("amount", "value", "total", "sum")]
    if not rest or len(rest) == len(words):
        return None
    hits = ctx.vocab.tables_named(rest)
    if not hits or not only_table(rest, hits, ctx.vocab):
        return None
    table = hits[0][0]
    quantities = [
        Col(table, c) for c in table.columns if is_number(c.data_type) and not is_key(Col(table, c))
    ]
    return quantities[0] if len(quantities) == 1 else None


def fits_phrase(ctx: LinkContext, specific: Measure, general: Measure) -> bool:
    """The specific measure's column answers the general phrase too."""
    if specific.col is None:
        return False
    words = [stem(w) for w in re.findall(r"[a-z0-9]+", general.label) if w not in STOP_WORDS]
    return ctx.vocab.column_score(words, specific.col) >= 0.5


def read_defined(ctx: LinkContext, phrase: str, depth: int, func: str = "") -> Measure | None:
    """A term the glossary, the instructions or the question itself defines
    ("revenue refers to the sum of sale_price"): its definition, read as a measure."""
    words = {stem(w) for w in re.findall(r"[a-z0-9]+", phrase.lower()) if w not in STOP_WORDS}
    if not words:
        return None
    for entry in ctx.glossary:
        for name in entry.names:
            names = {stem(w) for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in STOP_WORDS}
            if names and names <= words:
                if is_condition(ctx.vocab, entry):
                    continue  # a state ("open"), applied as a condition
                formula = sql_measure(ctx, entry)
                if formula is not None:
                    if entry.term not in ctx.applied:
                        ctx.applied.append(entry.term)
                    return formula
                body = trim_definition(entry.definition or entry.expression).lower()
                body = re.sub(r"\s+(?:in|from) the \w+ table$", "", body)
                got = read_measure(ctx, body, depth=depth + 1)
                if got is None and func and func != "COUNT":
                    got = read_measure(
                        ctx, f"{func.lower()} {body}".replace("avg ", "average "), depth=depth + 1
                    )
                if got is not None:
                    if entry.term not in ctx.applied:
                        ctx.applied.append(entry.term)
                    return got
    return None


def read_arith(ctx: LinkContext, low: str) -> Measure | None:
    """``A / B``, ``(A - (B + C)) / A * 100``: arithmetic over measure phrases and
    numbers, parsed with precedence; every phrase must link or the whole fails."""
    tokens = arith_tokens(low)
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
        m = read_measure(ctx, phrase) or read_measure(ctx, "total " + phrase)
        if m is None:
            return None
        for t in (m.table, m.col.table if m.col else None, *m.tables):
            if t is not None:
                tables.append(t)
        return ("m", m)

    def chained(operand: Callable[[], object | None], ops: tuple[str, str]) -> object | None:
        # operands joined left to right by one precedence level's operators
        nonlocal position
        left = operand()
        while left is not None and peek() in ops:
            op = peek()
            position += 1
            right = operand()
            if right is None:
                return None
            left = ("op", op, left, right)
        return left

    def term() -> object | None:
        return chained(factor, ("*", "/"))

    def expr() -> object | None:
        return chained(term, ("+", "-"))

    tree = expr()
    if tree is None or position != len(tokens) or not tables:
        return None
    return Measure("EXPR", label=low, tables=tuple(tables), expr=[tree])


# Operators said in words: the same arithmetic the symbols write. "less than" compares
# two values, it takes nothing away.
_SPELLED = (
    (r"\s+(?:times|multiplied by)\s+", " * "),
    (r"\s+divided by\s+", " / "),
    (r",?\s+(?:minus|less)\s+(?!than\b)(?:the\s+)?", " - "),
    (r"\s+plus\s+", " + "),
)
_ROW_FUNCS = {"SUM", "AVG", "MIN", "MAX"}


def spelled_arith(low: str) -> str:
    """``low`` with its spelled operators as symbols ("price times quantity less
    discount" -> "price * quantity - discount"); unchanged when it says none."""
    for said, op in _SPELLED:
        low = re.sub(said, op, low)
    return low


def read_row_arith(ctx: LinkContext, low: str, func: str) -> Measure | None:
    """``func`` over arithmetic of the columns of one row ("total of price times
    quantity less discount": ``SUM(unit_price * quantity * (1 - discount))``): the
    product of columns, not of their sums, which is what a quantity priced per unit
    means. Every phrase is one numeric column, all on one table or on a table it refers
    to (one row each); a phrase two columns there fit equally is not guessed. A
    discount taken from a product is a fraction of it when every stored value of the
    subtracted column lies in [0, 1], an amount otherwise."""
    if func not in _ROW_FUNCS:
        return None
    tokens = arith_tokens(low)
    phrases = [t for t in tokens if t not in "()+-*/" and not re.fullmatch(r"\d+(\.\d+)?", t)]
    if not phrases or any(re.search(rf"\b(?:{'|'.join(AGGREGATE_WORDS)})\b", p) for p in phrases):
        return None  # an operand that names its own aggregate is a measure (read_arith)
    fits = [_numeric_fits(ctx, p) for p in phrases]
    if not all(fits):
        return None
    placed = _one_row(ctx, fits)
    if placed is None:
        return None
    by_phrase = dict(zip(phrases, placed, strict=True))
    columns: dict[int, Col] = {}
    position = 0

    def peek() -> str:
        return tokens[position] if position < len(tokens) else ""

    def factor() -> exp.Expr | None:
        nonlocal position
        tok = peek()
        if tok == "(":
            position += 1
            inner = expr()
            if peek() != ")":
                return None
            position += 1
            return exp.Paren(this=inner) if inner is not None else None
        if not tok or tok in ")+-*/":
            return None
        position += 1
        if re.fullmatch(r"\d+(\.\d+)?", tok):
            return exp.Literal.number(tok)
        node = exp.column(by_phrase[tok].column.name)
        columns[id(node)] = by_phrase[tok]
        return node

    def term() -> exp.Expr | None:
        nonlocal position
        left = factor()
        while left is not None and peek() in ("*", "/"):
            op = peek()
            position += 1
            right = factor()
            if right is None:
                return None
            left = (
                exp.Mul(this=left, expression=right)
                if op == "*"
                else exp.Div(this=left, expression=right)
            )
        return left

    def expr() -> exp.Expr | None:
        nonlocal position
        left = term()
        while left is not None and peek() in ("+", "-"):
            op = peek()
            position += 1
            right = term()
            if right is None:
                return None
            if op == "-" and isinstance(left, exp.Mul) and _fraction(right, columns):
                # "price times quantity less discount": the product less its fraction
                share = exp.Paren(this=exp.Sub(this=exp.Literal.number(1), expression=right))
                left = exp.Mul(this=left, expression=share)
            elif op == "-":
                left = exp.Sub(this=left, expression=right)
            else:
                left = exp.Add(this=left, expression=right)
        return left

    tree = expr()
    if tree is None or position != len(tokens) or len(columns) < 2:
        return None
    aggregate = {"SUM": exp.Sum, "AVG": exp.Avg, "MIN": exp.Min, "MAX": exp.Max}[func]
    tables = tuple(dict.fromkeys(c.table for c in columns.values()))
    return Measure("SQLEXPR", label=low, expr=[aggregate(this=tree), columns], tables=tables)


def asked_aggregate(ctx: LinkContext, phrase: str) -> str:
    """The aggregate the question asks of a measure ``phrase`` spells without one ("total
    sales per employee, price times quantity"): the first aggregate word said outside the
    phrase; a sum when none is (an amount per row, asked per group, adds up)."""
    rest = ctx.low.replace(phrase, " ") if phrase else ctx.low
    said = re.search(rf"\b({'|'.join(AGGREGATE_WORDS)})\s+(?:of\s+(?:the\s+)?)?(\w+)", rest)
    if said is None:
        return "SUM"
    if not find_column(ctx, [stem(said.group(2))], numeric=True, threshold=0.99):
        # "total sales": the name of what is computed, said by the arithmetic
        ctx.computed.update({said.group(2), stem(said.group(2))})
        ctx.known.update({said.group(2), stem(said.group(2))})
    return AGGREGATE_WORDS[said.group(1)]


def _numeric_fits(ctx: LinkContext, phrase: str) -> list[Col]:
    """The numeric columns ``phrase`` names best (ties kept: a choice for the row)."""
    words = [stem(w) for w in re.findall(r"[a-z0-9]+", phrase) if w not in STOP_WORDS]
    if not words:
        return []
    scored = [
        (ctx.vocab.column_score(words, c), c)
        for c in ctx.vocab.columns
        if is_number(c.column.data_type) and not is_key(c)
    ]
    best = max((s for s, _ in scored), default=0.0)
    return [c for s, c in scored if s >= 0.5 and s == best] if best >= 0.5 else []


def _one_row(ctx: LinkContext, fits: list[list[Col]]) -> list[Col] | None:
    """One column per phrase, all read from one row: a table that holds some of them,
    with the others on tables it refers to (one row each). None when no table, or more
    than one, places every phrase exactly once."""
    tables = {c.table.qualified: c.table for cols in fits for c in cols}
    found: list[tuple[str, list[Col]]] = []
    for name in tables:
        parents = {e.parent for e in ctx.graph.edges if e.child == name}
        placed = []
        for cols in fits:
            here = [c for c in cols if c.table.qualified == name]
            if not here:
                here = [c for c in cols if c.table.qualified in parents]
            if len(here) != 1:
                break
            placed.append(here[0])
        else:
            if any(c.table.qualified == name for c in placed):
                found.append((name, placed))
    if not found:
        return None
    # the table that holds the most of them is the row; a tie between rows is not guessed
    held = [sum(c.table.qualified == name for c in placed) for name, placed in found]
    best = [placed for (_, placed), h in zip(found, held, strict=True) if h == max(held)]
    return best[0] if len(best) == 1 else None


def _fraction(node: exp.Expr, columns: dict[int, Col]) -> bool:
    """Whether ``node`` is one column whose stored values all lie in [0, 1] (read from
    the data: the column's extent), so taking it from a product takes a share of it."""
    col = columns.get(id(node))
    extent = col.column.extent if col is not None else None
    return extent is not None and extent[0] >= 0 and extent[1] <= 1


def arith_tokens(text: str) -> list[str]:
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
