"""A count of rows said with their event's verb last ("How many cars from 2022 were
sold?", "How many planes from 2004 departed?") answered by the rows alone (``COUNT(*) FROM cars WHERE year = 2022``):
the verb asks for the rows the event happened to, and a table that refers to them
records it (``sales``, named by the verb: ``linker.names_event_of``). Counting every
car of 2022 answers "how many cars from 2022 are there", a confident wrong answer; the
statement must read the event's table. Refused naming the verb and that table, so the
linker's reading through the event (``_event_verbs``, "… had sales") is tried (ISSUE-45,
s64). A verb that names no table referring to the rows ("made", "built") stands, as
does a statement that reads the event's table already, a verb said as a present
state ("How many houses are listed?": the homes, listed or not, as another session's test
holds), and a verb that names a time
column of the counted rows themselves ("How many users were created?": their own
``created_at``, whatever other tables keep one)."""

from __future__ import annotations

import re

from services.sql.linker import (
    STATIVE,
    LinkContext,
    LinkError,
    is_past,
    names_event_by_column,
    names_event_of,
)
from services.sql.verify._facts import StatementFacts

# "How many cars from 2022 were sold?", "… planes from 2004 departed?": the count's rows,
# then their event's verb last (a past form)
_PASSIVE_COUNT = re.compile(
    r"^\s*how\s+many\s+(?P<rest>[a-z0-9][a-z0-9 ]*?)\s+(?:(?:were|was|have\s+been|had\s+been)\s+)?"
    r"(?P<verb>[a-z]+)\s*[?.]?\s*$"
)


def check_event_rows(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """Refuse a count of the rows a passive event verb is said of that reads no table
    recording the event (see the module's docstring)."""
    said = _PASSIVE_COUNT.match(text)
    if said is None or not facts.base or not is_past(said["verb"]):
        return
    if said["rest"].split()[-1] in STATIVE:
        return  # "how many houses are listed": a state of the rows, not an event
    verb = said["verb"]
    counted = ctx.catalog.table(facts.base)
    if counted is None or names_event_by_column(ctx.vocab, verb, counted):
        return  # the rows keep the verb's time themselves ("users were created")
    for edge in ctx.vocab.graph.edges_of(facts.base):
        if edge.parent != facts.base or edge.child == facts.base or edge.child in facts.tables:
            continue
        table = ctx.catalog.table(edge.child)
        if table is not None and names_event_of(ctx.vocab, verb, table):
            raise LinkError(
                f"'{verb}' is what happened to the {counted.name} "
                f"rows: the {table.name} rows record it, and the statement reads none"
            )
