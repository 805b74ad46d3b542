"""A pick out of the earlier rows by what they do: "which of them visited the Willow
Grande Museum?", "who among them teach History?", "of those, who sang in 2015?", "which
of these have a visit?".

Read as a question about the earlier rows (a result reference) the words reach the SQL
service as one question of their own with the rows spelled out, which the linker often
cannot read ("which of the visitors … visited …"). What they ask is the earlier rows
that do it — the narrowing "those that visited the Willow Grande Museum" says: the same
rows, fewer of them, as a filter the SQL service adds to the earlier statement.

Only a verb of the rows' own opens such a pick, or a copula before a place, an origin or
a comparison ("who among them are from japan?"). Any other copula or an auxiliary after
it asks about the rows ("which of them is the oldest?", "who among them was hired
first?"), as
does a ranking or a superlative ("which of them sold the most?") or a second question
word; these stay references. So does a pick after a count or a grouping: "which of
them …" then asks for rows the earlier answer did not list.
"""

from __future__ import annotations

import re

_PICK = re.compile(
    r"^(?:(?:and|but|now|so)\s+)*"
    r"(?:(?:which|who)\s+(?:ones\s+)?(?:of|among)\s+(?:them|those|these)"
    r"|(?:of|among|from)\s+(?:them|those|these)\s*,?\s*(?:which|who)(?:\s+ones)?)"
    r"\s+(?P<verb>[a-z]+)\s+(?P<rest>\S.*?)\s*[?.!]*$",
    re.IGNORECASE,
)
# Words after the pick that make it a question about the rows, not a pick by a deed.
_ASKS = frozenset({
    "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "will", "would",
    "can", "could", "should", "may", "might", "must", "shall",
})  # fmt: skip
_RANKS = frozenset({
    "most", "least", "more", "less", "fewer", "than", "top", "bottom", "first", "last",
    "best", "worst", "highest", "lowest", "largest", "smallest", "biggest", "oldest",
    "youngest", "newest", "latest", "earliest", "cheapest", "greatest", "fewest",
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "each", "every",
})  # fmt: skip
# a superlative's ending ("longest", "busiest"); the nouns that end so are words of their own
_SUPERLATIVE = re.compile(r"^[a-z]{2,}(?:est)$")
_NOT_SUPERLATIVE = frozenset({
    "interest", "request", "forest", "west", "guest", "contest", "test", "rest", "nest",
    "chest", "harvest", "invest", "suggest", "protest", "quest", "midwest", "southwest",
    "northwest", "arrest", "digest", "honest",
})  # fmt: skip
_COPULAS = frozenset({"is", "are", "was", "were"})
# what may follow a copula in a pick by a state ("are from japan", "were born after 1990",
# "are older than 40"); "is the oldest", "are their names" ask about the rows instead
_PLACING = frozenset({
    "in", "from", "at", "on", "with", "without", "over", "under", "above", "below", "older",
    "younger", "born", "based", "located", "made", "between", "after", "before", "since",
})  # fmt: skip
_AGGREGATED = re.compile(r"\b(?:COUNT|SUM|AVG|MIN|MAX)\s*\(|\bGROUP\s+BY\b", re.IGNORECASE)


def picked_condition(text: str, prior_sql: str) -> str | None:
    """The condition a pick by a deed keeps the earlier rows by ("that visited the Willow
    Grande Museum"), or None when the words ask about the rows or the earlier answer
    listed no rows to pick from."""
    match = _PICK.match(text.strip())
    if match is None or not prior_sql or _AGGREGATED.search(prior_sql):
        return None
    verb = match.group("verb").lower()
    rest = match.group("rest")
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", rest)]
    if verb in _COPULAS and words[0] in _PLACING:
        pass  # "who among them are from japan?": a state the rows are in picks them
    elif verb in _ASKS or verb in _RANKS or not words:
        return None
    if any(w in _RANKS or (_SUPERLATIVE.match(w) and w not in _NOT_SUPERLATIVE) for w in words):
        return None
    return f"that {verb} {rest}"
