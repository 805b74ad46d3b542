"""A question refused as asked, said again in the word order and words the readers know.

Both readers read a question from its head ("how many", "what", "list"), then the items
it shows, then its conditions and groupings. English says some of these otherwise, and
the question was refused for a form, not for a name:

- a fronted phrase: "In 1980, how many cars were made?" says what "How many cars were
  made in 1980?" says, and "For each stadium, how many concerts are there?" what "How
  many concerts are there for each stadium?" says; the phrase stands before the head,
  where neither reader looks, so it is moved to the end of the sentence it qualifies.

- an imperative the readers do not open with: "Name the singers under 35." asks what
  "List the singers under 35." asks (the rows, by their label);
- an idiom of happening: "Which concerts took place in 2015?" says what "Which concerts
  happened in 2015?" says; "place" there names no place.

Each is a change of grammar only: every word that may name something is still read, and
still has to be placed; the linker reads a question rephrased only when the question as
asked is refused (``QuestionLinker.link``).
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


def rephrased(question: str) -> str:
    """``question`` in the readers' grammar (see the module's docstring); a question
    already in it as it is."""
    return counted_per(plain_idioms(named_as_listed(fronted_last(question))))


# A question that opens with its rows' plural noun and asks for them "per" something,
# with no head ("planes built before 1990 per manufacturer"): a telegraphic count.
_ROWS_PER = re.compile(
    r"^\s*(?P<noun>[A-Za-z]+[^sS\W]s|[A-Za-z]+ies)\b(?P<rest>.*\bper\s+[A-Za-z].*)$"
)
# Words that already say what is shown or measured: the question is no bare count.
_MEASURED = re.compile(
    r"\b(?:how|what|which|who|list|show|count|counts|number|numbers|total|totals|sum|sums|"
    r"average|averages|avg|mean|maximum|minimum|max|min|most|least|share|percentage|"
    r"percent|ratio|rate|rates)\b",
    re.IGNORECASE,
)


def counted_per(question: str) -> str:
    """ "planes built before 1990 per manufacturer" -> "Number of planes built before 1990
    per manufacturer": rows named by their plural noun, "per" a grouping and nothing
    said of them is how a busy writer asks for the number of them in each group (the
    verifier refuses the question as asked: a listing of planes is no value per
    manufacturer). Any other question as it is; the readers still place every word."""
    m = _ROWS_PER.match(question)
    if m is None or _MEASURED.search(question):
        return question
    return f"Number of {m.group('noun').lower()}{m.group('rest')}"


# "Name the …" / "Name all the …": a request for rows, as "List the …" is.
_NAME_HEAD = re.compile(r"^(\s*)name(\s+(?:all\s+)?the\b)", re.IGNORECASE)
# "take place" and its forms: an idiom for happening, not a place.
_TAKE_PLACE = {"take": "happen", "takes": "happens", "took": "happened", "taken": "happened",
               "taking": "happening"}  # fmt: skip
_PLACE_IDIOM = re.compile(r"\b(take|takes|took|taken|taking)\s+place\b", re.IGNORECASE)


def named_as_listed(question: str) -> str:
    """ "Name the singers under 35." -> "List the singers under 35."; any other question
    as it is."""
    return _NAME_HEAD.sub(r"\1List\2", question, count=1)


def plain_idioms(question: str) -> str:
    """ "Which concerts took place in 2015?" -> "Which concerts happened in 2015?"; any
    other question as it is."""
    return _PLACE_IDIOM.sub(lambda m: _TAKE_PLACE[m.group(1).lower()], question)


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
