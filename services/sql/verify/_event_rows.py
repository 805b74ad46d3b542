"""Rows said with their event's verb must be read through the event's table.

A past form said of the counted or listed rows names the event they take part in, either
straight after their noun ("cars sold per make", "patients treated by each doctor") or
last in a passive count ("How many cars from 2022 were sold?", "How many planes from
2004 departed?"). Where a table that refers to those rows records that event (``sales``:
"sold"; ``treatments``: "treated", by :func:`linker.names_event_of`) and the statement
does not read it, it answers for every row, sold or not: "how many cars from 2022 are
there", a confident wrong answer (ISSUE-45, s64 probes4 and events). Refused naming the
verb and the event's table, so the linker's reading through the event (``_event_verbs``,
"… had sales") is tried.

What stands: a verb that names no table referring to the rows ("cars made in Germany",
"planes built before 1990": the rows themselves), a statement that reads the event's
table already, a verb said as a present state ("How many houses are listed?": the homes,
listed or not), and a verb that names a time column of the counted rows themselves
("How many users were created?": their own ``created_at``)."""

from __future__ import annotations

import re

from services.sql.catalog import TableInfo
from services.sql.linker import (
    LinkContext,
    LinkError,
    names_event_by_column,
    names_event_of,
    passive_count_said,
)
from services.sql.verify._facts import StatementFacts
from services.sql.words import irregular_past, stem

_WORD = re.compile(r"[a-z]+")
# what may stand between the rows' noun and the verb: "cars (that were) sold"
_BETWEEN = frozenset({"that", "which", "were", "was", "been", "have", "has", "got"})


def _verbs_after(text: str, noun: str) -> list[str]:
    """The past forms said right after ``noun`` (a table's one noun, stemmed), with at
    most a relative pronoun and an auxiliary between."""
    words = _WORD.findall(text)
    found = []
    for index, word in enumerate(words):
        if stem(word) != noun:
            continue
        for after in words[index + 1 : index + 4]:
            if after in _BETWEEN:
                continue
            if after.endswith("ed") or irregular_past(after):
                found.append(after)
            break
    return found


def _said_verbs(ctx: LinkContext, text: str, facts: StatementFacts, base: TableInfo) -> list[str]:
    verbs = []
    parts = ctx.vocab.table_words.get(base.qualified, [])
    if not facts.tables - {base.qualified} and len(parts) == 1:
        verbs += _verbs_after(text, parts[0])
    passive = passive_count_said(text)
    if passive is not None and passive[1] not in verbs:
        verbs.append(passive[1])
    # the rows keep the verb's time themselves ("users were created": their created_at)
    return [v for v in verbs if not names_event_by_column(ctx.vocab, v, base)]


def check_event_read(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse a statement that reads no table recording the event its rows are said
    with (see the module's docstring)."""
    base = ctx.catalog.table(facts.base) if facts.base else None
    if base is None:
        return
    verbs = _said_verbs(ctx, text, facts, base)
    if not verbs:
        return
    for edge in ctx.vocab.graph.edges_of(base.qualified):
        if edge.parent != base.qualified or edge.child == base.qualified:
            continue
        if edge.child in facts.tables:
            continue
        child = ctx.catalog.table(edge.child)
        if child is None:
            continue
        for verb in verbs:
            if names_event_of(ctx.vocab, verb, child):
                raise LinkError(
                    f"'{verb}' is what the {child.name} rows record of the {base.name} "
                    f"rows, and the statement does not read {child.name}"
                )
