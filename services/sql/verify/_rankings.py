"""Rankings the question asks for, and only those: a superlative ("largest", "the
most", "youngest") or a clause-ending "first"/"last" ranks; a ranking by a count answers
a question that counts; a ranking by a date ranks by the date the question names.

"The singer with the largest net worth" reads the right table and column whether or not
it orders by net worth, so word coverage never sees a ranking dropped, nor one that
ranks by the wrong thing."""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TableInfo
from services.sql.linker import LinkContext, LinkError, is_temporal
from services.sql.verify._facts import StatementFacts
from services.sql.verify._statement import StatementNodes, is_key, ranking_key
from services.sql.words import stem, word_match

# Adjectives whose "-est" and "-er" forms compare rows; "most"/"least" and the like.
SUPERLATIVE = re.compile(
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
    superlative = SUPERLATIVE.search(_without_bounds(text, ordered=facts.ordered))
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
    if ordered:
        # before "first" goes: "oldest first" says the order only while "first" is read
        # (removed first, the phrase was never found and "oldest first" was refused)
        sup = SUPERLATIVE.pattern
        text = re.sub(rf"(?:\bfrom\s+)?{sup}\s+to\s+(?:the\s+)?{sup}", " ", text)
        text = re.sub(rf"{sup}(?=[^.?;,]{{0,40}}\bfirst\b)", " ", text)
        text = re.sub(rf"\b(?:order|sort|rank|arrange)\w*\s+(?:\w+\s+){{0,4}}?{sup}", " ", text)
    return re.sub(r"\bat (?:most|least)\b|\b(?:first|last)\b", " ", text)


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


# "the most makers", "the fewest models": a count word and the noun it counts.
_MOST_OF = re.compile(r"\b(?:most|fewest|least)\s+([a-z]+)")
_TEXT_TYPES = ("text", "character varying", "varchar", "character", "char", "bpchar", "citext")


def check_ranked_by_the_text_counted(
    ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes
) -> None:
    """ "Which country has the most makers?" ranked by ``car_makers.maker``, a text
    column the word "makers" names: "the most X" counts X, and the order of a text
    column's words (the maker whose name sorts last) is no amount of anything. A
    statement ranked by a text column whose name is the noun after "most" / "fewest" /
    "least" answers the alphabet, not the count; numbers or dates stored as text (their
    sample values say so) still order as amounts and are left alone."""
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is None:
        return
    key = ranking_key(tree)
    if not isinstance(key, exp.Column):
        return
    table = nodes.owner(key)
    column = table.column(key.name) if table is not None else None
    if table is None or column is None:
        return
    if not column.data_type.lower().startswith(_TEXT_TYPES) or _amounts(column.sample_values):
        return
    parts = [p for p in ctx.vocab.column_words.get((table.qualified, column.name), []) if p]
    for match in _MOST_OF.finditer(ctx.low):
        said = stem(match.group(1))
        if parts and any(word_match(said, p) >= 0.9 for p in parts[-1:]):
            raise LinkError(
                f"the question counts {match.group(1)} ('{match.group(0)}'); the statement "
                f"orders the text of {table.name}.{column.name}"
            )


def _amounts(samples: tuple[str, ...]) -> bool:
    """Stored text that reads as numbers or dates ("18.0", "1970-01-01"): it ranks."""
    return bool(samples) and all(re.fullmatch(r"[\d\s.:/+-]+", v or "") for v in samples)


# "the top 10 tickers by …": a number of the rows of a table the question names.
_TOP_ROWS = re.compile(r"\btop\s+(\d+)\s+([a-z]+)\s+(?:by|with|in|for|of|that|who|which)\b")


def check_ranks_the_rows_said(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """ "Which exchanges are the top 10 tickers by total transaction amount listed on?"
    answered by grouping the transactions per exchange and keeping 10 exchanges: the
    question ranks tickers (the noun after "top 10" names their table), the statement
    ranks the values of one of the tickers' columns, many tickers to a value. A
    statement whose limit is the number said and whose groups hold a column of that
    table, none of which identifies its rows (a key, a name or title, a column other
    tables refer to), ranks something else than the rows said."""
    if not isinstance(tree, exp.Select):
        return
    said = _TOP_ROWS.search(ctx.low)
    limit = tree.args.get("limit")
    group = tree.args.get("group")
    if said is None or limit is None or group is None:
        return
    if limit.expression is None or limit.expression.name != said.group(1):
        return
    named = ctx.vocab.tables_named([stem(said.group(2))])
    if len(named) != 1:
        return
    table = named[0][0]
    grouped = [c for c in group.expressions if isinstance(c, exp.Column)]
    own = [
        c for c in grouped if (t := nodes.owner(c)) is not None and t.qualified == table.qualified
    ]
    if not own or any(_identifies_rows(ctx, table, c.name) for c in own):
        return
    raise LinkError(
        f"the question ranks the top {said.group(1)} {said.group(2)}; the statement ranks "
        f"values of {own[0].name}, which many {said.group(2)} share"
    )


def _identifies_rows(ctx: LinkContext, table: TableInfo, column: str) -> bool:
    parts = ctx.vocab.column_words.get((table.qualified, column), [])
    if is_key(table, column) or (parts and parts[-1] in ("name", "title", "id")):
        return True
    return any(
        e.parent == table.qualified and e.parent_columns == (column,)
        for e in ctx.graph.edges_of(table.qualified)
    )
