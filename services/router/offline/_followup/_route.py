"""Whether a follow-up to a SQL answer leaves its statement for the documents: one that asks
what text says does; one that edits the statement (a value, a condition) stays on it.
"""

from __future__ import annotations

import re

from services.router.offline._followup._kinds import Relation, Resolution
from services.router.offline._rules import aggregation_score, semantic_score


def document_question(question: str) -> bool:
    """A follow-up that names document content ("what do their notes say …") leaves the
    SQL route; anything countable or listable stays."""
    return semantic_score(question) > aggregation_score(question)[0]


# A noun naming a kind of record, said before the one meant ("in the document Customer
# reviews", "the sheet Budget"): it says where a value is, not what any text says.
_RECORD_NOUN = re.compile(r"\b(?:the |a |an )?(?:document|sheet|article|wiki)s?\b", re.I)

# How a follow-up edits the earlier statement: another condition, value, period, row
# count or grouping (not a question about its rows, which may ask what their text says).
_EDITS = frozenset({Relation.FILTER, Relation.VALUE_SWAP, Relation.TIME_SHIFT,
                    Relation.ROW_LIMIT, Relation.REGROUP})  # fmt: skip


def leaves_sql(question: str, resolution: Resolution) -> bool:
    """Whether a follow-up to a SQL answer leaves its statement for the documents. One
    that edits the statement (narrows it to a value, swaps one) stays on it unless it
    asks about content with more than a record's kind: "only in the document Customer
    reviews" after "How many paragraphs are there?" narrows the count to a value the
    schema may store (the SQL service reads it there, or refuses), where "only those
    whose notes mention pricing" asks what text says."""
    built = resolution.builds_on
    if built is None or built.relation not in _EDITS:
        return document_question(question)
    if built.value:
        # the value swapped in is data, not a cue: a title reads "How to write a CV"
        question = re.sub(re.escape(built.value), " ", question, flags=re.I)
    if built.relation is Relation.FILTER and (one := _HAVING_ONE.match(built.condition)):
        # "just those with a feature": a kind of related row the earlier rows have (the
        # SQL service reads it as their having one, or refuses), not what text says
        question = re.sub(rf"\b{re.escape(one.group('noun'))}\b", " ", question, flags=re.I)
    return document_question(_RECORD_NOUN.sub(" ", question))


# A filter that says only that a related row exists ("with a feature", "that have at
# least one visit"), and its noun: no value, no text, just the having of one.
_HAVING_ONE = re.compile(
    r"^(?:(?:that|which|who)\s+)?(?:have|has|had|having|with)\s+"
    r"(?:at\s+least\s+one|one\s+or\s+more|a|an|any|some)\s+(?P<noun>[a-z][a-z ]*?)\s*[?.!]*$",
    re.IGNORECASE,
)
