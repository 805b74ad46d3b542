"""The output list: where a question says what it wants back, and each item of it read
as dimensions (columns shown) or measures."""

from __future__ import annotations

import re
from collections.abc import Sequence

from services.sql.linker._context import LinkContext
from services.sql.linker._dates import RECENCY
from services.sql.linker._lookup import (
    content_words,
    each_entity,
    find_column,
    label_columns,
    name_spans,
)
from services.sql.linker._measures import (
    asked_aggregate,
    read_arith,
    read_measure,
    read_ranked,
    read_row_arith,
    spelled_arith,
)
from services.sql.linker._plan import BE, Dim, Measure, is_key, only_table
from services.sql.linker._reading import GENERIC, clean_item, cut_relative, split_items
from services.sql.linker._terms import without_conditions
from services.sql.linker._unasked import naming_number
from services.sql.linker._vocabulary import Col
from services.sql.words import (
    AGGREGATE_WORDS,
    GRAMMAR_WORDS,
    STOP_WORDS,
    stem,
)


def is_covered(ctx: LinkContext, phrase: str, resolved: list[Dim | Measure]) -> bool:
    """An output item already answered by a measure the question spelled out in full
    ("maximum itch score" after "maximum itch VAS score at day 100")."""
    low = clean_item(phrase).lower()
    cue = next((w for w in low.split() if w in AGGREGATE_WORDS), "")
    if not cue:
        return False
    func = AGGREGATE_WORDS[cue]
    words = {stem(w) for w in re.findall(r"[a-z0-9]+", low) if w not in STOP_WORDS}
    for r in resolved:
        if isinstance(r, Measure) and r.func == func and r.col is not None:
            label = {stem(w) for w in re.findall(r"[a-z0-9]+", r.label)}
            if words - set(AGGREGATE_WORDS) <= label | set(ctx.vocab.column_words[r.col.key]):
                return True
    return False


def split_output(ctx: LinkContext, text: str) -> tuple[str, str, str]:
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
        out, tail = cut_relative(text[m.end() :])
        out, tail = _listed_with_their(out, tail)
        head_text = text[: m.start()]
        head = ""
        h = re.search(
            r"\b(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+)?(.*?)(?:[?.]|$)",
            head_text,
            re.I,
        )
        if h:
            head = cut_relative(h.group(1))[0]
        many = re.match(r"\s*how many\s+", head_text, re.I)
        generic = re.fullmatch(
            r"\s*(?:the\s+)?(?:total\s+)?(?:count|number)s?\s*[.?]?\s*", out, re.I
        )
        if many and generic and not head:
            # "How many customers joined in 2023? Return the total count."
            head = "number of " + count_noun(ctx, head_text[many.end() :])
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
    if which is None:
        # "Which doctors specialise in immunology?": a verb and its preposition, whose
        # object is the condition; the rows asked for are the noun's (only where the
        # noun names a table and nothing more, checked below)
        which = re.match(
            r"\s*(?:which|what)\s+(?:\d+\s+)?((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?=[a-z]+\s+(?:in|on|at|from|with|by|for|to|as)\b)",
            text,
            re.I,
        )
    if which:
        words = [stem(w) for w in which.group(1).lower().split() if w not in STOP_WORDS]
        hits = ctx.vocab.tables_named(words)
        if hits and only_table(words, hits, ctx.vocab):
            # "Which 10 companies have the most employees?": list the companies
            return "", which.group(1), text[which.end() :]
    what = re.search(r"^\s*(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+)?", text, re.I)
    if what:
        out, tail = cut_relative(text[what.end() :])
        return "", out, tail
    many = re.search(r"^\s*how many\s+|^\s*count\s+(?:the\s+|all\s+)?", text, re.I)
    if many:
        rest = text[many.end() :]
        noun = count_noun(ctx, rest)
        return "", "number of " + noun, rest[len(noun) :]
    return "", text, text


# "List the coupon codes with their discount value": what the rows are listed with, said
# as theirs, up to the end of the sentence
_WITH_THEIR = re.compile(r"\s*\bwith (?:their|its) ([a-z][a-z ,]*?)\s*(?=[?.!;]|$)", re.I)


def _listed_with_their(out: str, tail: str) -> tuple[str, str]:
    """What the rows of a list are listed "with their …" is asked for as an item of the
    list is ("the coupon codes with their discount value": the codes and the discount
    value), not a condition on them ("coupons with a discount value above 20" is one:
    no possessive). The relative-clause cut leaves it in the tail, where the conditions
    read it as a column said and nothing showed it."""
    found = _WITH_THEIR.search(tail)
    if found is None or not out.strip():
        return out, tail
    return f"{out}, {found.group(1)}", tail[: found.start()] + tail[found.end() :]


def count_noun(ctx: LinkContext, rest: str) -> str:
    """What "how many" counts: the words up to a verb, a grammar word or a table's
    name ("meetings" of "meetings happened this quarter")."""
    noun: list[str] = []
    # "how many American Airlines Inc. flights": a stored name's words are no table's
    # noun, the noun follows the name
    names = name_spans(ctx, rest)
    at = named = 0
    for w in rest.split():
        at = rest.index(w, at)
        start, at = at, at + len(w)
        if any(a <= start < b for a, b in names):
            noun.append(w)
            named += 1
            continue
        if w.lower() in BE or w.lower() in ("do", "does", "did", "have", "has", "had"):
            break
        if noun and (w.lower().strip("?,.") in GRAMMAR_WORDS or w.lower() in STOP_WORDS):
            break  # "meetings happened this quarter": the noun has ended
        noun.append(w)
        if ctx.vocab.tables_named([stem(w.strip("?,."))]) or len(noun) - named >= 5:
            break
    return " ".join(noun)


def read_item(ctx: LinkContext, phrase: str) -> list[Dim | Measure] | None:
    inner = re.search(r"\(([^)]*)\)", phrase)
    if inner and spelled_arith(inner.group(1).lower()) != inner.group(1).lower():
        # "total sales (unit price times quantity, less the discount)": the aside spells
        # one measure, its comma lists no second item; split, "less the discount" would
        # leave the discount a grouping. Not read here yet (s68: keyless, the grouping it
        # sits in is read by a bare key), so it is refused rather than split.
        return None
    if inner and re.search(r",|\band\b", inner.group(1)):
        out: list[Dim | Measure] = []
        for part in split_items(inner.group(1)):
            got = read_item(ctx, part)
            if got is None:
                return None
            out.extend(got)
        return out
    low = without_conditions(ctx, clean_item(phrase).lower())
    if re.search(r"\S", RECENCY.sub("", low)):
        low = " ".join(RECENCY.sub("", low).split())
    if not low:
        return []
    ranked = read_ranked(ctx, phrase)
    if ranked is not None:
        return [ranked]
    grain = re.fullmatch(r"(?:the\s+)?(day|week|month|quarter|year)(?:\s+\(as a date\))?", low)
    if grain and find_column(ctx, [grain.group(1)], threshold=0.99) is None:
        # the date column is chosen once the measures say which table it is
        anchor = Col(ctx.catalog.tables[0], ctx.catalog.tables[0].columns[0])
        return [Dim(anchor, grain.group(1), pending=True)]
    row = read_row_arith(ctx, spelled_arith(low), asked_aggregate(ctx, low))
    if row is not None:
        return [row]
    # arithmetic definitions inline ("(total sales amount / number of sales)")
    if re.search(r"[/*]|\s-\s", low):
        m = read_arith(ctx, low)
        return [m] if m else None
    day_kind = re.search(r"\b(weekend|weekday)s?\b", low)
    if day_kind:
        rest = (low[: day_kind.start()] + low[day_kind.end() :]).strip()
        rest = re.sub(r"^(?:number of|count of|total)\s+", "", rest)
        counted = read_measure(ctx, "number of " + rest) if rest else None
        if counted is not None and counted.func in ("COUNT", "COUNT_DISTINCT"):
            counted.dow = True
            return [counted]
    measure = read_measure(ctx, low)
    if measure is not None:
        return [measure]
    words = content_words(ctx, low)
    if not words:
        return []
    if words == ["id"]:
        # "their ID": the key of the entity the question goes through ("each salesperson")
        entity = each_entity(ctx)
        if entity is not None and len(entity.primary_key) == 1:
            key = entity.column(entity.primary_key[0])
            if key is not None:
                return [Dim(Col(entity, key))]
    if len(words) >= 2 and words[-1] in ("id", "identifier", "key"):
        owners = ctx.vocab.tables_named(words[:-1])
        if owners and len(owners[0][0].primary_key) == 1:
            owner = owners[0][0]
            key = owner.column(owner.primary_key[0])
            if key is not None:
                return [Dim(Col(owner, key))]
    col = find_column(ctx, words)
    table_hits = ctx.vocab.tables_named(words)
    if col is not None and (
        not table_hits
        or ctx.vocab.column_score(words, col) >= 0.99
        or not only_table(words, table_hits, ctx.vocab)
    ):
        return shown_for(ctx, col, words)
    if table_hits:
        table = table_hits[0][0]
        # a row number read as what names the row: shown by the label rule (``_unasked``);
        # a text key (an airport's ``faa``) is a value the rows are said by, kept
        return [Dim(c, naming_key=naming_number(c)) for c in label_columns(ctx, table)]
    return None


_KEY_WORDS = frozenset({"id", "identifier", "key", "number", "code"})


def shown_for(ctx: LinkContext, col: Col, words: Sequence[str]) -> list[Dim | Measure]:
    """What to show for a column the output names: a reference ("the account owner")
    shows the row it points to by name, a flag that names its rows ("primary
    contacts") shows those rows (the flag becomes their condition)."""
    # "user IDs": the plural asks for keys as the singular does (the stemmer leaves "ids")
    asks_key = any(w in _KEY_WORDS or w.removesuffix("s") in _KEY_WORDS for w in words)
    if not asks_key and col.column.name not in col.table.primary_key:
        for edge in ctx.graph.edges_of(col.table.qualified):
            if edge.child == col.table.qualified and edge.child_column == col.column.name:
                parent = ctx.catalog.table(edge.parent)
                labels = [c for c in label_columns(ctx, parent) if not is_key(c)] if parent else []
                if labels:
                    return list(map(Dim, labels))
    if col.column.data_type == "boolean" and any(
        ctx.vocab.table_score([w], col.table) >= 0.99 for w in words
    ):
        labels = label_columns(ctx, col.table)
        if labels:
            return list(map(Dim, labels))
    return [Dim(col)]


def merge_elliptic(ctx: LinkContext, items: list[str]) -> list[str]:
    """ "first and last name" -> "first name", "last name"."""
    out: list[str] = []
    for i, item in enumerate(items):
        words = item.split()
        if len(words) == 1 and i + 1 < len(items) and read_item(ctx, item) in (None, []):
            nxt = items[i + 1].split()
            if len(nxt) >= 2:
                out.append(f"{item} {nxt[-1]}")
                continue
        if (
            len(words) == 1
            and words[0].lower() in GENERIC
            and out
            and len(out[-1].split()) >= 2
            and out[-1].split()[-1].lower() in GENERIC
        ):
            # "drug id and name": the name of the same thing
            out.append(" ".join([*out[-1].split()[:-1], words[0]]))
            continue
        out.append(item)
    return out
