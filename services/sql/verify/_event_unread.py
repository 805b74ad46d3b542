"""A past form said straight after the counted rows' noun ("cars sold per make",
"patients treated by each doctor") names the event the rows take part in; where a
table that refers to those rows records that event (``sales``: "sold"; ``treatments``:
"treated", by :func:`linker.names_event_of`) and the statement reads the rows alone, it
counts or lists every row, sold or not (ISSUE-45, s64 probes4: "cars sold per make"
answered with every car per make). Refused naming the event's table; a verb that names
no table that refers to the rows ("cars made in Germany", "planes built before 1990")
describes the rows themselves and stands."""

from __future__ import annotations

import re

from services.sql.linker import LinkContext, LinkError, names_event_of
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


def check_event_read(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse a statement that reads the counted rows alone where the verb said after
    their noun names a table that records that event of theirs (module docstring)."""
    base = ctx.catalog.table(facts.base) if facts.base else None
    if base is None or facts.tables - {facts.base}:
        return
    parts = ctx.vocab.table_words.get(facts.base, [])
    if len(parts) != 1:
        return
    verbs = _verbs_after(text, parts[0])
    if not verbs:
        return
    for edge in ctx.vocab.graph.edges_of(facts.base):
        if edge.parent != facts.base or edge.child == facts.base:
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
