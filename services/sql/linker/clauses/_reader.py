"""The clause reader, left to right: the head, the items, then each clause by its first
words; every token used or a word of the grammar, else :class:`Decline`.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.sql.linker._context import LinkContext
from services.sql.linker._mentions import (
    Chart,
    Token,
    chart,
    question_tokens,
)
from services.sql.linker._plan import (
    Plan,
)
from services.sql.linker.clauses._conditions import (
    absent_clause,
    compare_clause,
    negated_value_clause,
    present_clause,
    table_clause,
    value_clause,
)
from services.sql.linker.clauses._cues import (
    DIMENSIONS,
    NUMBER_WORDS,
    cue_words,
    is_glue,
    unit_after_number,
    unplaced_words,
)
from services.sql.linker.clauses._events import (
    event_clause,
    event_column,
    later_count,
    scope_clause,
    when_event,
)
from services.sql.linker.clauses._head import counted_head, read_head, read_items
from services.sql.linker.clauses._months import is_month, month_clause
from services.sql.linker.clauses._planning import make_plan
from services.sql.linker.clauses._ranking import (
    count_by_clause,
    directed_group_clause,
    group_clause,
    order_clause,
    rank_clause,
    top_clause,
)
from services.sql.linker.clauses._reading import Decline, Read, Reading


def read_clauses(ctx: LinkContext) -> Plan:
    """The question's plan, or :class:`Decline` when a phrase cannot be placed."""
    tokens = question_tokens(ctx.question)
    if not tokens:
        raise Decline("empty question")
    fronted = _fronted_group(ctx.question, tokens)
    # the form first: it needs no mentions
    kind, at = read_head(Reading(ctx, Chart(tokens)), fronted)
    unplaced = unplaced_words(ctx.vocab, tokens[at:], ctx.meanings, ctx.question)
    unplaced = [t for t in unplaced if not is_month(t)]  # read by ``month_clause``
    if unplaced:  # a word nothing could place: decline before any lookup
        raise Decline(f"nothing read {unplaced[0].text!r}")
    reading = Reading(ctx, chart(ctx.vocab, ctx.question, ctx.meanings))
    _comparatives_name_nothing(reading)
    reading.use(0, at)
    # a word no mention covers and no clause could use: decline before reading on
    for i, t in enumerate(reading.tokens[at:], at):
        if t.quoted or t.number is not None or t.low in cue_words() or is_glue(ctx, t):
            continue
        if unit_after_number(reading.tokens, i) or is_month(t):
            continue
        if not reading.chart.covering(i) and event_column(reading, i) is None:
            raise Decline(f"nothing read {t.text!r}")
    read = Read("list", when=True) if kind == "when" else Read(kind)
    if fronted and group_clause(reading, read, 0) != fronted:
        raise Decline("a fronted 'for each' the reader cannot place")
    at = counted_head(reading, read, at)
    at = read_items(reading, read, at)
    _clauses(reading, read, at)
    _stranded_preposition(reading)
    glue = [t for i, t in enumerate(reading.tokens) if i not in reading.used and is_glue(ctx, t)]
    unused = [
        t.text for i, t in enumerate(reading.tokens) if i not in reading.used and t not in glue
    ]
    if unused:
        raise Decline(f"nothing read {unused[0]!r}")
    # the grammar and the relating verbs read as such: no condition hides in them; the
    # words read by meaning are explained by the names they were linked to
    ctx.known.update(w for t in glue for w in (t.low, t.stem))
    ctx.known.update(m.word for m in ctx.meanings)
    # a number written as a word and read as one ("at least two courses") names nothing;
    # the verifier checks the statement uses its value
    ctx.known.update(
        t.low for i, t in enumerate(reading.tokens) if i in reading.used and t.low in NUMBER_WORDS
    )
    return make_plan(reading, read)


def _comparatives_name_nothing(reading: Reading) -> None:
    """ "longer than", "older than": a comparative adjective before "than" compares a
    dimension (``compare_clause``); a name it only resembles (``airports.lon``, begun by
    "longer") is no mention of it, or the item reader took "flights longer" for a column
    and left "than" unread. A name the adjective spells exactly stays."""
    adjectives = {
        i
        for i in range(reading.size - 1)
        if reading.low(i) in DIMENSIONS and reading.low(i + 1) == "than"
    }
    if adjectives:
        reading.chart.mentions = [
            m
            for m in reading.chart.mentions
            if not (m.start in adjectives and m.size == 1 and m.score < 1.0)
        ]


def _clauses(reading: Reading, read: Read, at: int) -> None:
    recognisers = (
        when_event,
        later_count,
        scope_clause,
        event_clause,
        order_clause,
        directed_group_clause,
        group_clause,
        count_by_clause,
        top_clause,
        rank_clause,
        negated_value_clause,
        absent_clause,
        compare_clause,
        month_clause,
        value_clause,
        present_clause,
        table_clause,
    )
    i = at
    while i < reading.size:
        for recognise in recognisers:
            after = recognise(reading, read, i)
            if after is not None:
                i = after
                break
        else:
            i += 1


def _stranded_preposition(reading: Reading) -> None:
    """ "What countries are singers above age 20 from?": a preposition that ends the
    question, in a clause of being or coming, has no object of its own: its object is
    what the question asks for (the items), so it is grammar, no clause."""
    k = reading.size - 1
    if (
        k >= 2
        and k not in reading.used
        and reading.low(k) in ("from", "in")
        and any(reading.low(j) in _BEING for j in range(1, k))
    ):
        reading.use(k, k + 1)


_BEING = frozenset({"is", "are", "was", "were", "come", "comes", "came"})


def _fronted_group(question: str, tokens: Sequence[Token]) -> int:
    """ "For each stadium, how many concerts play there?": a grouping said before the
    question, up to its comma; where the question proper starts (0 when none)."""
    if len(tokens) < 4 or " ".join(t.low for t in tokens[:2]) not in _FRONTED:
        return 0
    for k in range(2, min(len(tokens) - 1, 6)):
        if "," in question[tokens[k].end : tokens[k + 1].start]:
            return k + 1
    return 0


_FRONTED = frozenset({"for each", "for every", "in each"})
