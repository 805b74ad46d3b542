"""Rankings the question asks for, and only those: a superlative ("largest", "the
most", "youngest") or a clause-ending "first"/"last" ranks; a ranking by a count answers
a question that counts; a ranking by a date ranks by the date the question names.

"The singer with the largest net worth" reads the right table and column whether or not
it orders by net worth, so word coverage never sees a ranking dropped, nor one that
ranks by the wrong thing."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.linker import LinkContext, LinkError, is_temporal
from services.sql.verify._facts import StatementFacts
from services.sql.verify._statement import StatementNodes, ranking_key
from services.sql.words import word_match

# Adjectives whose "-est" and "-er" forms compare rows; "most"/"least" and the like.
_SUPERLATIVE = re.compile(
    r"\b(?:most|least|highest|lowest|largest|smallest|biggest|greatest|fewest|maximum|"
    r"minimum|max|min|top|bottom|best|worst|oldest|youngest|newest|latest|earliest|"
    r"longest|shortest|heaviest|lightest|cheapest|fastest|slowest|richest|poorest|"
    r"tallest|widest|deepest|hottest|coldest|strongest|weakest|busiest|easiest|hardest)\b"
)
# "Which employee was hired first?": "first"/"last" ending a clause ranks ("first name",
# "the first 3" and "at last" do not end one)
_LAST_ORDINAL = re.compile(r"(?<!\bat )\b(first|last)\s*(?:[?.!;,]|$)")
# The words that make a ranking one by a count: "the most flights", "the fewest", "the
# highest number of", "how many", "more than", "often", "frequent", "popular".
_COUNTING = re.compile(
    r"\b(?:most|fewest|least|more|fewer|less|many|number|numbers|count|counts|often|"
    r"frequent\w*|popular|times)\b"
)
# Name parts every date column shares: they tell no two dates apart.
_DATE_PARTS = frozenset({"date", "time", "dt", "at", "on", "day", "timestamp", "ts"})


def check_superlatives(text: str, facts: StatementFacts, reads: set[str]) -> None:
    """A superlative orders and limits, or takes a MIN / MAX (or ranks in a window),
    unless the word names a column the statement reads; a "first"/"last" ending a
    clause orders."""
    superlative = _SUPERLATIVE.search(_without_bounds(text, ordered=facts.ordered))
    if (
        superlative
        and not (
            (facts.ordered and facts.limited) or facts.aggregates & {"MIN", "MAX"} or facts.ranked
        )
        and not reads.intersection({superlative.group(0)})
    ):
        raise LinkError(f"the statement does not rank by {superlative.group(0)!r}")
    last = _LAST_ORDINAL.search(text)
    if last and not (facts.ordered or facts.aggregates & {"MIN", "MAX"} or facts.ranked):
        raise LinkError(f"the statement does not rank by {last.group(1)!r}")


def _without_bounds(text: str, *, ordered: bool) -> str:
    """The text less phrases that read like superlatives but bound a comparison ("at
    most 3", "at least") or are part of a name ("first name"); in an ordered statement
    also those that say the order ("from most to least", "lowest score first")."""
    text = re.sub(r"\bat (?:most|least)\b|\b(?:first|last)\b", " ", text)
    if ordered:
        sup = _SUPERLATIVE.pattern
        text = re.sub(rf"(?:\bfrom\s+)?{sup}\s+to\s+(?:the\s+)?{sup}", " ", text)
        text = re.sub(rf"{sup}(?=[^.?;,]{{0,40}}\bfirst\b)", " ", text)
        text = re.sub(rf"\b(?:order|sort|rank|arrange)\w*\s+(?:\w+\s+){{0,4}}?{sup}", " ", text)
    return text


def check_ranked_by_a_count(text: str, tree: exp.Expr) -> None:
    """ "What is the name of the highest airport?" ranked by ``COUNT(*)`` per airport
    name: a superlative of a quantity ("highest", "largest", "oldest") read as a count
    of rows ranks by how many rows share a value, which the question never asked. A
    statement whose ranking (its first ORDER BY key) is a count is held to a question
    that says something counts."""
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is None:
        return
    key = ranking_key(tree)
    if key is not None and key.find(exp.Count) is not None and not _COUNTING.search(text):
        raise LinkError("the statement ranks by a count of rows; the question counts nothing")


def check_ranked_by_the_date_said(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """ "List the 3 most recently hired employees" ranked by ``birth_date``: of several
    dates of a table, a recency word picks one by what the question says; a statement
    that ranks by a date no word of the question names while a word names another date
    of the same table ranks the wrong event."""
    if not isinstance(tree, exp.Select):
        return
    key = ranking_key(tree)
    if not isinstance(key, exp.Column):
        return
    table = nodes.owner(key)
    if table is None:
        return
    words = [w for w in ctx.words if w not in _DATE_PARTS]

    def said(column: str) -> bool:
        parts = [p for p in ctx.vocab.column_words.get((table.qualified, column), [])]
        parts = [p for p in parts if p not in _DATE_PARTS and len(p) > 2]
        return any(word_match(w, p) >= 0.9 for w in words for p in parts)

    dates = [c.name for c in table.columns if is_temporal(c.data_type)]
    if key.name not in dates or said(key.name):
        return
    other = next((c for c in dates if c != key.name and said(c)), None)
    if other is not None:
        raise LinkError(
            f"the question names {table.name}.{other}; the statement ranks by "
            f"{table.name}.{key.name}"
        )
