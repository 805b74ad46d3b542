"""A phrase put before the question it qualifies, read where the readers look for it.

English may front an adverbial phrase and set it off with a comma: "In 1980, how many
cars were made?" says what "How many cars were made in 1980?" says, and "For each
stadium, how many concerts are there?" what "How many concerts are there for each
stadium?" says. Both readers read a question from its head ("how many", "what",
"list"), with its conditions and groupings after it; a fronted phrase stands before the
head, where neither looks, and the question was refused for a form it did not know. So
the phrase is moved to the end of the sentence it qualifies, which is a change of word
order only: every word is still read, and still has to be placed.
"""

from __future__ import annotations

import re

# A prepositional phrase (no clause punctuation inside) closed by a comma, then the head
# of a question or a request.
_FRONTED = re.compile(
    r"^\s*(?P<phrase>(?:for|in|during|at|on|from|within|across|over|after|before|since)"
    r"\s+[^,?.;!'\"]{1,60}?)\s*,\s*"
    r"(?P<rest>(?:how|what|which|who|whom|whose|when|where|list|show|give|find|return|tell"
    r"|count|display|is|are|was|were|do|does|did)\b.*)$",
    re.IGNORECASE | re.DOTALL,
)
# The end of the first sentence: a stop followed by a space or the end (not the point of
# a decimal, "3.5").
_END = re.compile(r"\s*[?.!](?=\s|$)")


def fronted_last(question: str) -> str:
    """``question`` with a fronted prepositional phrase moved to the end of the sentence
    it qualifies ("In 1980, how many cars were made?" -> "How many cars were made in
    1980?"); any other question as it is."""
    m = _FRONTED.match(question)
    if m is None:
        return question
    phrase, rest = m.group("phrase"), m.group("rest")
    phrase = phrase[0].lower() + phrase[1:]
    end = _END.search(rest)
    at = end.start() if end else len(rest.rstrip())
    moved = f"{rest[:at]} {phrase}{rest[at:]}"
    return moved[0].upper() + moved[1:]
