"""Follow-up resolution: a question asked inside a conversation becomes a standalone one.

The offline implementation of the RESOLVE_FOLLOW_UP role and the router's check on a
model's rewrite (Gemini's fast tier proposes one; these rules bound what it may do).

People ask in turns ("How many open Security Suite deals are there?" → "and in 2024?" →
"only the healthcare ones" → "what do their call notes say about pricing?"). The planner
and the SQL service only understand standalone questions, so before planning the router
rewrites a follow-up against the previous turn: its resolved question (what was really
answered), the set it described, and its result members.

These are offline rules over the question's shape; they never consult a schema (the SQL
service is the one schema linker) and never invent a referent: a reference with nothing
to point at (``the second one`` after an answer with one member) resolves to UNRESOLVED
with the reason, and the router says so instead of guessing. A question that is not
shaped like a follow-up stands alone, even inside a conversation (a topic change).

One module a reading step, each a reading of the request's shape against the previous
turn: ``_kinds`` (what a reading returns), ``_words`` (cleaning a request, the set a
question described), ``_ordinal`` (one member of an earlier answer picked), ``_period``
(a time shift), ``_limit`` (a row count), ``_regroup`` (another grouping), ``_narrow``
(a condition added), ``_dropped`` (a condition removed), ``_structural`` (the statement
edits in the order they are tried), ``_reference`` (pronouns and demonstratives pointing
at earlier rows), ``_swap`` (a value replaced), ``_route`` (whether a follow-up leaves
the SQL route) and ``_resolve`` (the rewriter that tries them in turn).
"""

from services.router.offline._followup._dropped import drops_condition
from services.router.offline._followup._kinds import BuildsOn, Relation, Resolution
from services.router.offline._followup._limit import changes_row_count
from services.router.offline._followup._narrow import hides_rows
from services.router.offline._followup._resolve import resolve

__all__ = [
    "BuildsOn",
    "Relation",
    "Resolution",
    "changes_row_count",
    "drops_condition",
    "hides_rows",
    "resolve",
]
