"""Rows no event of theirs happened to, said with the event's verb in a form the
"never <verb>ed" reader of ``_conditions`` does not spell as a table: an irregular past
("cars that were never sold": ``sales``) or a verb that makes its table's noun by a
suffix ("patients never treated": ``treatments``), and "nobody" / "no one" as the
subject ("museums nobody visited", "tickers no one has traded"). The table is the one
:func:`names_event_of` names, so the anti-join follows from the catalog's nouns and the
event lexicon, not from the question's words; one that the verb names no table of is
left to the other readers (and to the verifier, which refuses a negation the statement
does not apply). Read only where the question names one table of rows besides the
event's: "customers who never bought a car" names two, and which of them the rows are
is the composer's to get wrong, so it is left refused."""

from __future__ import annotations

import re

from services.sql.linker._context import LinkContext
from services.sql.linker._event_verbs import names_event_of, negated_object
from services.sql.linker._plan import LinkError, Plan
from services.sql.words import irregular_past, stem

# "never sold", "not been treated", "nobody has visited", "no one ever traded"
_NEGATED_VERB = re.compile(
    r"\b(?:never|not|nobody|no\s+one)\s+(?:(?:has|have|had|was|were|been|be|ever)\s+){0,2}"
    r"([a-z]{3,})\b"
)


def negated_events(ctx: LinkContext, plan: Plan) -> None:
    """Add to ``plan.anti`` the table a negated past form names as its event (module
    docstring); "nobody" / "no one" are then read."""
    for m in _NEGATED_VERB.finditer(ctx.low):
        verb = m.group(1)
        if not (verb.endswith("ed") or irregular_past(verb)):
            continue
        _object_not_rows(ctx, m)
        found = [t for t in ctx.catalog.tables if names_event_of(ctx.vocab, verb, t)]
        if not found:
            found = [t for t, _ in ctx.vocab.tables_named([stem(verb[:-2])])][:1]
        rows = [t for t in ctx.named if t not in found]
        if len(found) != 1 or len(rows) != 1:
            continue  # "customers who never bought a car": whose rows, the words say
        if found[0] not in plan.anti:
            plan.anti.append(found[0])
        ctx.known.update({"nobody", "one"} & set(m.group(0).split()))


# the verb's object named right after it: "never visited a museum", "not bought any cars"
_OBJECT = re.compile(r"\s+(?:(?:a|an|any|the)\s+)?([a-z]+)\s*[?.]?\s*$")


def _object_not_rows(ctx: LinkContext, m: re.Match[str]) -> None:
    """Refuse a negated event whose object is named right after the verb ("visitors who
    never visited a museum"): the rows asked for are those said before the negation,
    each with no row of the event's table; the other readers here and in
    ``_conditions`` take the named object's table for the negated rows or for the rows
    listed (the museums never visited), a confident wrong answer. The event's reading
    (``_event_verbs``, "visitors with no visit") is tried after this refusal, where the
    words before the negation name a table the event refers to."""
    said = _OBJECT.match(ctx.low, m.end())
    if said is None:
        return
    found = negated_object(ctx.vocab, m.group(1), said.group(1))
    if found is None:
        return
    obj, event = found
    raise LinkError(
        f"could not place the rows that {m.group(0).strip()} {said.group(1)} (the "
        f"{event.name} rows record it of the {obj.name} rows and of the rows asked for)"
    )
